"""Facts from lint_rules.analysis.context: tests of a pattern, code under a TorchScript check."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.context import in_test, under_scripting_check
from lint_rules.analysis.model import FileModel


def _calls(src: str) -> tuple[FileModel, dict[str, cst.Call]]:
    """The model, and every call to a function named ``probe_<label>`` by its label."""
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    calls = {}
    for node in model.ordered:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value.startswith("probe_"):
            calls[node.func.value[len("probe_"):]] = node
    return model, calls


SRC = """
import unittest
import torch
from torch.jit import is_scripting

def test_shapes():
    probe_pytest()

class TestModel:
    def check(self):
        probe_test_class()

class Cases(unittest.TestCase):
    def helper(self):
        probe_unittest()

def train():
    probe_plain()
    if torch.jit.is_scripting():
        probe_scripting()
    else:
        probe_scripting_else()
    if not is_scripting() and flag:
        probe_imported_check()
    x = probe_ifexp() if torch.jit.is_tracing() else 0
    if torch.cuda.is_available():
        probe_other_if()
    if torch.jit.is_scripting():
        def inner():
            probe_nested_function()
"""


@pytest.mark.parametrize(("label", "expected"), [
    ("pytest", True), ("test_class", True), ("unittest", True), ("plain", False), ("scripting", False)])
def test_in_test(label, expected):
    model, calls = _calls(SRC)
    assert in_test(model, calls[label]) is expected


@pytest.mark.parametrize(("label", "expected"), [
    ("scripting", True), ("scripting_else", True), ("imported_check", True), ("ifexp", True),
    ("plain", False), ("other_if", False), ("nested_function", False), ("pytest", False)])
def test_under_scripting_check(label, expected):
    model, calls = _calls(SRC)
    assert under_scripting_check(model, calls[label]) is expected


@pytest.mark.parametrize(("layout", "linted", "expected"), [
    # a package next to pyproject.toml, and under src/: library modules
    ({"pyproject.toml": "", "pkg/__init__.py": "", "pkg/io.py": ""}, "pkg/io.py", True),
    ({"setup.py": "", "src/pkg/__init__.py": "", "src/pkg/sub/__init__.py": "", "src/pkg/sub/io.py": ""},
     "src/pkg/sub/io.py", True),
    # a script, a package without packaging, a package's examples folder, a module with a main guard
    ({"pyproject.toml": "", "train.py": ""}, "train.py", False),
    ({"pkg/__init__.py": "", "pkg/io.py": ""}, "pkg/io.py", False),
    ({"setup.cfg": "", "pkg/__init__.py": "", "pkg/examples/__init__.py": "", "pkg/examples/io.py": ""},
     "pkg/examples/io.py", False),
    ({"pyproject.toml": "", "pkg/__init__.py": "", "pkg/cli.py": "if __name__ == '__main__':\n    main()\n"},
     "pkg/cli.py", False),
])
def test_library_module(tmp_path, layout, linted, expected):
    from lint_rules.analysis.context import library_module
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import index_for

    for rel, text in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    model = FileModel(cst.parse_module((tmp_path / linted).read_text()))
    model.project_facts = ProjectFacts(index_for(None), str(tmp_path / linted))
    assert library_module(model) is expected


THIRD_PARTY = """
import torch
from torch.hub import download_url_to_file
cached = download_url_to_file(url, dst)
weights = args.pretrained_weights
probe_url("https://example.com/w.pt")
probe_attr(args.finetune)
probe_local(weights)
probe_downloaded(cached)
probe_call(hf_hub_download(repo, "w.pt"))
probe_own(args.resume)
probe_ckpt(os.path.join(out_dir, "ckpt.pt"))
probe_literal("checkpoint.pt")

def load_pretrained(net, path):
    probe_param(path)

def restore(net, path):
    probe_plain_param(path)
"""


@pytest.mark.parametrize(("label", "expected"), [
    ("url", True), ("attr", True), ("local", True), ("downloaded", True), ("call", True),
    ("own", False), ("ckpt", False), ("literal", False),
    ("param", True), ("plain_param", False),  # a parameter of a function named for what it loads
])
def test_third_party_file(label, expected):
    from lint_rules.analysis.context import third_party_file

    model, calls = _calls(THIRD_PARTY)
    assert third_party_file(model, calls[label].args[0].value) is expected


def test_documented_reads_comments_of_the_statement_and_docstrings_around_it() -> None:
    import re

    from lint_rules.analysis.context import documented

    model, calls = _calls('''
        class Prenet:
            """Dropout here stays ON at inference."""
            def forward(self, x):
                return probe_a(x)
        def sample(x):
            # on in every mode: Monte Carlo estimate
            y = probe_b(x)
            z = probe_c(y)  # monte carlo again
            return probe_d(z)
        def plain(x):
            """Adds noise."""
            return probe_e(x)
        ''')
    words = re.compile(r"at inference|monte carlo", re.I)
    assert {k: documented(model, c, words) for k, c in calls.items()} == {
        "a": True, "b": True, "c": True, "d": False, "e": False}


HANDED = """
import torch

def score(net, batches, device):
    for x, y in batches:
        net(x.to(device))
        net.head(x)
        helper = build_model()
        helper(x)

class Probe:
    def run(self, batches):
        for x in batches:
            self.model(x)

def rebinds(net, batches):
    net = net.module
    for x in batches:
        net(x)
"""


@pytest.mark.parametrize(("library", "expected"), [(True, {"net": True, "net.head": True, "helper": False,
                                                            "self.model": False, "rebinds:net": False}),
                                                    (False, {"net": False, "net.head": False, "helper": False,
                                                             "self.model": False, "rebinds:net": False})])
def test_hands_over_its_model(tmp_path, library, expected):
    from lint_rules.analysis.context import hands_over_its_model
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import index_for

    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (tmp_path / ("pyproject.toml" if library else "notes.txt")).write_text("")
    path = folder / "evaluate.py"
    path.write_text(textwrap.dedent(HANDED))
    model = FileModel(cst.parse_module(path.read_text()))
    model.project_facts = ProjectFacts(index_for(None), str(path))
    found = {}
    for call in model.nodes(cst.Call):
        text = cst.Module([]).code_for_node(call.func)
        if text in ("build_model", "x.to"):
            continue
        fn = model.enclosing_function(call)
        key = f"rebinds:{text}" if fn.name.value == "rebinds" else text
        found[key] = hands_over_its_model(model, fn, call.func)
    assert found == expected


@pytest.mark.parametrize(("layout", "linted", "expected"), [
    # a folder of tests, at any depth below the project root, and a conftest
    ({"setup.py": "", "tests/losses/test_memory.py": "x = 1\n"}, "tests/losses/test_memory.py", True),
    ({"pyproject.toml": "", "pkg/testing/case.py": "class ModelCase:\n    pass\n"}, "pkg/testing/case.py", True),
    ({"requirements.txt": "", "conftest.py": "import torch\n"}, "conftest.py", True),
    # a file named like a test module and written as one
    ({".git/HEAD": "", "model_test.py": "import unittest\n"}, "model_test.py", True),
    ({".git/HEAD": "", "test_fit.py": "def test_fit():\n    pass\n"}, "test_fit.py", True),
    # a research project's evaluation scripts: named "test", written as applications
    ({".git/HEAD": "", "test_model.py": "import torch\nmodel = torch.load('m.pt')\n"}, "test_model.py", False),
    ({"requirements.txt": "", "test.py": "def test(model, loader):\n    pass\n"}, "test.py", False),
    ({"setup.py": "", "tools/main_test_denoise.py": "import torch\n"}, "tools/main_test_denoise.py", False),
    # folders above the project root do not count
    ({"tests/proj/setup.py": "", "tests/proj/train.py": "import torch\n"}, "tests/proj/train.py", False),
])
def test_test_file(tmp_path, layout, linted, expected):
    from lint_rules.analysis.context import test_file
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import ProjectIndex

    for rel, text in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    model = FileModel(cst.parse_module((tmp_path / linted).read_text()))
    model.project_facts = ProjectFacts(ProjectIndex(), str(tmp_path / linted))
    assert test_file(model) is expected
