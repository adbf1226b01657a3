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


DOWNLOADS = """
import os
import torch
from urllib.request import urlretrieve
from huggingface_hub import hf_hub_download

def from_hub(repo, name, local_dir):
    weights_file = os.path.join(local_dir, name)
    if not os.path.exists(weights_file):
        weights_file = hf_hub_download(repo, name)
    probe_either(weights_file)

def fetch(url, cache):
    target = os.path.join(cache, url.split("/")[-1])
    urlretrieve(url, target)
    probe_fetched(target)

def elsewhere(url, cache):
    target = os.path.join(cache, "w.pt")
    probe_not_fetched_here(target)

def listed(folder):
    for f in get_files(folder):
        probe_listed(f)

def find(name):
    if name in KNOWN:
        return download_model(name)
    else:
        return probe_other_branch(name)

def after(url, target):
    probe_before_download(target)
    urlretrieve(url, target)
"""


@pytest.mark.parametrize(("label", "expected"), [
    ("either", True),  # one of its assignments downloads: the load may read a download
    ("fetched", True),  # the file a downloader writes in the same function
    ("not_fetched_here", False),  # the same spelling, but no downloader in its function
    ("listed", False),  # get_files() lists a folder: Keras' get_file() downloads, get_files() does not
    ("other_branch", False),  # the download runs only in the other branch
    ("before_download", False),  # read before anything is downloaded
])
def test_third_party_file_follows_every_assignment_and_a_downloader_that_writes_it(label, expected):
    from lint_rules.analysis.context import third_party_file

    model, calls = _calls(DOWNLOADS)
    assert third_party_file(model, calls[label].args[0].value) is expected


SAFE_FORMAT = """
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
import safetensors.torch as st

def read_weights(folder):
    if os.path.exists(os.path.join(folder, "model.safetensors")):
        return load_file(os.path.join(folder, "model.safetensors"))
    return probe_fallback(os.path.join(folder, "pytorch_model.bin"))

def read_shard(path):
    if path.endswith(".safetensors"):
        tensors = st.load_file(path)
    else:
        tensors = probe_module_alias(path)

def read_opened(path):
    with safe_open(path, framework="pt") as f:
        keys = list(f.keys())
    probe_opened(path)

def read_helper(model, path):
    load_safetensors_model(model, path)
    probe_helper(path)

def convert(src, dst):
    save_file(probe_converter(src), dst)   # writes safetensors: a converter of its own checkpoints

def resume(path):
    probe_plain(path)

probe_top_level(path)
"""


@pytest.mark.parametrize(("label", "expected"), [
    ("fallback", True), ("module_alias", True), ("opened", True), ("helper", True),
    ("converter", False),  # writing the format says less than reading it
    ("plain", False),
    ("top_level", False),  # the module's own statements read no safetensors, only its functions do
])
def test_reads_safe_format_looks_at_the_function_around_the_load(label, expected):
    from lint_rules.analysis.context import reads_safe_format

    model, calls = _calls(SAFE_FORMAT)
    assert reads_safe_format(model, calls[label]) is expected


WHOLE = """
import torch

def ensemble(weights):
    for w in weights:
        ckpt = torch.load(w)
        ckpt = (ckpt.get("ema") or ckpt["model"]).to("cpu").float()
        models.append(ckpt.fuse().eval())

def transfer(net, weights):
    csd = torch.load(weights)["model"].float().state_dict()
    net.load_state_dict(csd)

def whole(path):
    net = torch.load(path)
    net.eval()

def state_dict_item(net, path):
    ckpt = torch.load(path)
    net.load_state_dict(ckpt["model"])
    sd = {k: v.float() for k, v in ckpt["model"].items()}

def handed_over(net, path):
    net.load_state_dict(torch.load(path))

def before(net, path):
    ckpt = make()
    ckpt.eval()
    ckpt = torch.load(path)

def same_file(weights):
    run_id = torch.load(weights).get("run_id")
    ckpt = torch.load(weights)
    net = ckpt["model"].float().eval()

def other_file(weights, resume):
    run_id = torch.load(resume).get("run_id")
    ckpt = torch.load(weights)
    net = ckpt["model"].float().eval()
"""


@pytest.mark.parametrize(("function", "expected"), [
    ("ensemble", True), ("transfer", True), ("whole", True),
    ("state_dict_item", False),  # its items are state dicts: .items(), handed to load_state_dict
    ("handed_over", False), ("before", False),  # a use before the load is another value's
    ("same_file", True),  # the same path's other load shows what the file holds
    ("other_file", False),
])
def test_loads_a_module(function, expected):
    from lint_rules.analysis.context import loads_a_module

    model = FileModel(cst.parse_module(textwrap.dedent(WHOLE)))
    fn = next(n for n in model.nodes(cst.FunctionDef) if n.name.value == function)
    load = next(c for c in model.within(cst.Call, fn) if model.qualified_name(c.func) == "torch.load")
    assert loads_a_module(model, load) is expected
