"""Bugs visible only across files: the multi-file projects under tests/lint/projects/.

Each project marks its planted bugs with ``# BUG TRNnnn`` on the line that must be
reported; its ``*_ok`` twin differs only where the bug is (usually in the *other*
file) and must stay quiet. They are linted as users run the linter: the whole
tree, one changed file alone (pre-commit), and a buffer on standard input.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lint_rules.analysis.cross_file import ProjectFacts
from lint_rules.analysis.project_index import ProjectIndex
from lint_rules.engine import lint_source

REPO = Path(__file__).resolve().parents[3]
PROJECTS = Path(__file__).resolve().parents[1] / "projects"
CODES = ("TRN501", "TRN502", "TRN503", "TRN504")
_MARK = re.compile(r"#\s*BUG\s+(TRN\d{3})")


def marked(root: Path) -> set[tuple[str, int, str]]:
    out = set()
    for path in sorted(root.rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            for code in _MARK.findall(line):
                out.add((path.relative_to(root).as_posix(), i, code))
    return out


def _preview_mark(root: Path, mark: tuple[str, int, str]) -> bool:
    """The bug's mark says only --preview finds it: ``# BUG TRN301 (preview)``."""
    line = (root / mark[0]).read_text().splitlines()[mark[1] - 1]
    return re.search(rf"BUG\s+{mark[2]}\s+\(preview\)", line) is not None


def cli(root: Path, *args: str, stdin: str | None = None) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--select", ",".join(CODES),
                        "--format", "json", "--exit-zero", *args],
                       cwd=root, capture_output=True, text=True, timeout=120, env=env, input=stdin)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def found(findings: list[dict]) -> set[tuple[str, int, str]]:
    return {(Path(f["path"]).as_posix(), f["line"], f["code"]) for f in findings}


BUGGY = ["gan_sigmoid", "mnist_src", "nsproj"]


@pytest.mark.parametrize("name", BUGGY + [f"{n}_ok" for n in BUGGY])
def test_each_project_reports_exactly_its_marked_bugs(name: str) -> None:
    root = PROJECTS / name
    expected = marked(root)
    assert bool(expected) == (not name.endswith("_ok"))  # the twins plant nothing
    assert found(cli(root, ".")) == expected


@pytest.mark.parametrize("name", BUGGY)
def test_one_changed_file_linted_alone_still_sees_the_others(name: str) -> None:
    root = PROJECTS / name
    for rel in sorted({path for path, _, _ in marked(root)}):
        expected = {m for m in marked(root) if m[0] == rel}
        assert found(cli(root, rel)) == expected  # pre-commit passes only the changed file


def test_standard_input_resolves_imports_from_the_files_around_its_name() -> None:
    root = PROJECTS / "gan_sigmoid"
    source = (root / "gan/train.py").read_text()
    assert found(cli(root, "--stdin-filename", "gan/train.py", "-", stdin=source)) == {("gan/train.py", 14, "TRN502")}
    ok = PROJECTS / "gan_sigmoid_ok"
    assert cli(ok, "--stdin-filename", "gan/train.py", "-", stdin=source) == []


def lint_at(path: Path, source: str, index: ProjectIndex | None = None) -> tuple[set[str], list]:
    facts = ProjectFacts(index or ProjectIndex(), str(path))
    result = lint_source(source, str(path), CODES, facts=facts)
    return {f.code for f in result.findings}, facts.deps


TRAIN = """\
import torch
from torch import nn
{imports}

criterion = nn.BCELoss()
clf = {ctor}
loss = criterion(clf(x), y)
"""

SIGMOID_MODEL = """\
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
    def forward(self, x):
        return self.head(x)
"""


@pytest.mark.parametrize(("layout", "where", "imports", "ctor"), [
    ("same directory", {"model.py": SIGMOID_MODEL}, "from model import Net", "Net()"),
    ("module alias", {"model.py": SIGMOID_MODEL}, "import model as m", "m.Net()"),
    ("relative, two levels", {"pkg/__init__.py": "", "pkg/nets/__init__.py": "", "pkg/nets/model.py": SIGMOID_MODEL,
                              "pkg/sub/__init__.py": ""}, "from ..nets.model import Net", "Net()"),
    ("package re-export", {"pkg/__init__.py": "from .nets import Net\n", "pkg/nets/__init__.py": "from .model import *\nfrom .model import Net\n",
                           "pkg/nets/model.py": SIGMOID_MODEL, "pkg/sub/__init__.py": ""}, "from pkg import Net", "Net()"),
    ("namespace package", {"pkg/nets/model.py": SIGMOID_MODEL}, "from pkg.nets import model", "model.Net()"),
    ("src layout", {"pyproject.toml": "", "src/pkg/__init__.py": "", "src/pkg/model.py": SIGMOID_MODEL,
                    "src/pkg/sub/__init__.py": ""}, "from pkg.model import Net", "Net().to('cpu')"),
    ("module instance", {"model.py": "from torch import nn\nnet = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())\n"},
     "from model import net", "net"),
])
def test_import_layouts_resolve(tmp_path: Path, layout: str, where: dict[str, str], imports: str, ctor: str) -> None:
    for rel, text in where.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    here = tmp_path / ("src/pkg/sub" if "src/pkg/sub/__init__.py" in where else
                       "pkg/sub" if "pkg/sub/__init__.py" in where else "")
    here.mkdir(parents=True, exist_ok=True)
    codes, deps = lint_at(here / "train.py", TRAIN.format(imports=imports, ctor=ctor))
    assert codes == {"TRN502"}, layout
    assert any(d[0] == "summary" for d in deps)
    # Near miss: the same file in another tree, where the import resolves to nothing, stays quiet.
    codes, _ = lint_at(tmp_path.parent / f"{tmp_path.name}-elsewhere" / "train.py",
                       TRAIN.format(imports=imports, ctor=ctor))
    assert codes == set()


def test_cycles_syntax_errors_and_missing_modules_are_quiet(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from b import Net\n")
    (tmp_path / "b.py").write_text("from a import Net\n")  # a re-export cycle
    (tmp_path / "broken.py").write_text("class Net(nn.Module:\n")
    (tmp_path / "base.py").write_text("from derived import Net as Base\nclass Net(Base):\n    pass\n")
    (tmp_path / "derived.py").write_text("from base import Net as Base\nclass Net(Base):\n    pass\n")
    # Nesting that would crash LibCST's native parser (a segmentation fault, not an exception).
    (tmp_path / "deep.py").write_text("class Net:\n    x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    (tmp_path / "chain.py").write_text("class Net:\n    x = 1" + " + 1" * 50000 + "\n")
    (tmp_path / "binary.py").write_bytes(b"\xff\xfe\x00class Net: pass\n")
    for imports in ("from a import Net", "from broken import Net", "from missing import Net",
                    "from derived import Net", "from . import Net", "from deep import Net", "from chain import Net",
                    "from binary import Net"):
        codes, _ = lint_at(tmp_path / "train.py", TRAIN.format(imports=imports, ctor="Net()"))
        assert codes == set(), imports


def test_is_module_class_follows_bases_across_files(tmp_path: Path) -> None:
    import libcst as cst

    from lint_rules.analysis.model import FileModel

    (tmp_path / "base.py").write_text("import pytorch_lightning as pl\nclass Base(pl.LightningModule):\n    pass\n")
    (tmp_path / "model.py").write_text("from base import Base\nclass Net(Base):\n    pass\nclass Plain:\n    pass\n")
    module = cst.parse_module("from model import Net, Plain\nNet\nPlain\n")
    model = FileModel(module)
    facts = ProjectFacts(ProjectIndex(), str(tmp_path / "train.py"))
    net, plain = (s.body[0].value for s in module.body[1:])
    assert facts.is_module_class(model, net) is True
    assert not facts.is_module_class(model, plain)


def test_a_value_built_from_a_module_class_of_another_file_is_a_module(tmp_path: Path) -> None:
    import libcst as cst

    from lint_rules.analysis.kinds import CRITERION, MODULE
    from lint_rules.analysis.model import FileModel

    (tmp_path / "nets").mkdir()
    (tmp_path / "nets" / "__init__.py").write_text("from .layers import Tagger, Settings, SpanLossWrapper\n")
    (tmp_path / "nets" / "layers.py").write_text(
        "import torch\n"
        "class Base(torch.nn.Module):\n"
        "    @classmethod\n"
        "    def defaults(cls):\n"
        "        return {}\n"
        "class Tagger(Base):\n"
        "    pass\n"
        "class SpanLossWrapper(torch.nn.Module):\n"
        "    pass\n"
        "class Settings:\n"
        "    pass\n")
    module = cst.parse_module(
        "import nets\nfrom nets import Tagger, Settings, SpanLossWrapper\n"
        "tagger = Tagger(4)\nqualified = nets.Tagger(4)\nloss_fn = SpanLossWrapper()\n"
        "settings = Settings()\nfound = Tagger.defaults()\n"
        "tagger\nqualified\nloss_fn\nsettings\nfound\n")
    model = FileModel(module)
    model.project_facts = ProjectFacts(ProjectIndex(), str(tmp_path / "train.py"))
    kinds = {s.body[0].value.value: model.kind_of(s.body[0].value) for s in module.body[-5:]}
    # a classmethod may return anything (here a dict): only calling the class itself builds a module
    assert kinds == {"tagger": MODULE, "qualified": MODULE, "loss_fn": CRITERION, "settings": None, "found": None}


@pytest.mark.parametrize(("code", "body", "expected"), [
    ("TRN702", "gen = Upsampler()\ntorch.save(gen, 'gen.pth')\n", {4}),
    ("TRN702", "gen = Upsampler()\ntorch.save(gen.state_dict(), 'gen.pth')\n", set()),  # the fix
    ("TRN702", "opts = Options()\ntorch.save(opts, 'opts.pth')\n", set()),  # a project class, no module
    ("TRN403", "class Tagger(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.up = Upsampler()\n    def forward(self, x):\n        return self.up.forward(x)\n",
     {8}),
])
def test_rules_see_modules_built_from_classes_of_other_files(tmp_path: Path, code: str, body: str,
                                                           expected: set[int]) -> None:
    (tmp_path / "blocks.py").write_text("import torch\nclass Upsampler(torch.nn.Module):\n    pass\n"
                                        "class Options:\n    pass\n")
    path = tmp_path / "train.py"
    facts = ProjectFacts(ProjectIndex(), str(path))
    source = "import torch\nfrom blocks import Upsampler, Options\n" + body
    result = lint_source(source, str(path), {code}, possible={code}, facts=facts)
    assert {f.line for f in result.findings if f.code == code} == expected


HEAD_MODULE = """\
import torch
class AnchorHead(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(scale))
    def forward(self, x):
        return x * self.scale
class Config:
    def __init__(self, scale):
        self.scale = scale
"""

DETECTOR = """\
import torch
from proposals import {name}
class Detector(torch.nn.Module):
    def __init__(self, scales):
        super().__init__()
        self.heads = {container}
"""


@pytest.mark.parametrize(("name", "container", "expected"), [
    ("AnchorHead", "[AnchorHead(s) for s in scales]", {"TRN401"}),
    ("AnchorHead", "torch.nn.ModuleList([AnchorHead(s) for s in scales])", set()),  # the fix
    ("Config", "[Config(s) for s in scales]", set()),  # a project class that is not a module
])
def test_trn401_sees_module_classes_of_other_files(tmp_path: Path, name: str, container: str,
                                                    expected: set[str]) -> None:
    (tmp_path / "proposals.py").write_text(HEAD_MODULE)
    path = tmp_path / "detector.py"
    facts = ProjectFacts(ProjectIndex(), str(path))
    result = lint_source(DETECTOR.format(name=name, container=container), str(path), {"TRN401"}, facts=facts)
    assert {f.code for f in result.findings} == expected


NOT_A_MODULE = "class AnchorHead:\n    def __init__(self, scale):\n        self.scale = scale\n"


@pytest.mark.parametrize(("files", "detector", "expected"), [
    # lib/model/detector.py imports model.proposals: lib/ is on sys.path when the project runs
    ({"lib/model/proposals.py": HEAD_MODULE}, "lib/model", {"TRN401"}),
    # from a subdirectory of it, the nearest directory named `model` above the file counts
    ({"lib/model/proposals.py": HEAD_MODULE}, "lib/model/heads", {"TRN401"}),
    # a directory not named like the import: Python would not find it, and neither do we
    ({"lib/models/proposals.py": HEAD_MODULE}, "lib/models", set()),
    # the project root answers first: its model/proposals.py defines a class that is not a module
    ({".git/HEAD": "", "model/proposals.py": NOT_A_MODULE, "lib/model/proposals.py": HEAD_MODULE}, "lib/model",
     set()),
])
def test_an_import_named_like_a_directory_above_the_file_resolves_from_its_parent(
        tmp_path: Path, files: dict[str, str], detector: str, expected: set[str]) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    path = tmp_path / detector / "detector.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    source = DETECTOR.format(name="AnchorHead", container="[AnchorHead(s) for s in scales]")
    source = source.replace("from proposals import", "from model.proposals import")
    result = lint_source(source, str(path), {"TRN401"}, facts=ProjectFacts(ProjectIndex(), str(path)))
    assert {f.code for f in result.findings} == expected


ENGINE = """\
import torch
def run_epoch(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
def evaluate(model, loader):
    return [model(x) for x, _ in loader]
"""

MAIN = """\
import torch
import engine
def main(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5)
    for epoch in range(epochs):
{body}
"""


@pytest.mark.parametrize(("body", "expected"), [
    ("        schedule.step()\n        engine.run_epoch(model, loader, optimizer)\n", {"TRN801"}),
    ("        engine.run_epoch(model, loader, optimizer)\n        schedule.step()\n", set()),  # the fix
    ("        schedule.step()\n        engine.evaluate(model, loader)\n", set()),  # a helper that does not step
])
def test_trn801_sees_optimizer_steps_in_helpers_of_other_files(tmp_path: Path, body: str, expected: set[str]) -> None:
    (tmp_path / "engine.py").write_text(ENGINE)
    path = tmp_path / "main.py"
    facts = ProjectFacts(ProjectIndex(), str(path))
    result = lint_source(MAIN.format(body=body), str(path), {"TRN801"}, facts=facts)
    assert {f.code for f in result.findings} == expected
    assert any(d[0] == "summary" for d in facts.deps)


def test_a_result_says_what_it_depended_on_and_whether_that_still_holds(tmp_path: Path) -> None:
    # The API behind `torchcheck server`'s re-lint of a buffer when a module it imports is saved.
    import shutil
    import time

    from lint_rules.api import Settings, dependencies_hold, lint_paths, lint_text

    shutil.copytree(PROJECTS / "gan_sigmoid", tmp_path / "p")
    train = tmp_path / "p" / "gan" / "train.py"
    model = next(p for p in (tmp_path / "p" / "gan").glob("*.py") if "Sigmoid()" in p.read_text())
    settings = Settings.resolve(tmp_path, isolated=True, extend_select=["TRN502"])  # a preview rule, by code
    result = lint_text(train.read_text(), train, settings)
    assert "TRN502" in {f.code for f in result.findings}
    assert result.depends_on and dependencies_hold(result.depends_on)
    cached = Settings.resolve(tmp_path, isolated=True, extend_select=["TRN502"], cache_dir=tmp_path / "cache", jobs=1)
    first = [r for r in lint_paths([train], cached)]
    again = [r for r in lint_paths([train], cached)]  # from the cache: the same dependencies
    assert first[0].depends_on and again[0].depends_on == first[0].depends_on
    time.sleep(0.01)  # a new modification time, whatever the file system's resolution
    model.write_text(model.read_text().replace("Sigmoid()", "Identity()"))
    assert not dependencies_hold(result.depends_on)
    assert dependencies_hold([])  # a result that depended on no other file always holds


TRAINLIB = """\
import torch


def fit(a, b, c, d):
    for x, y in b:
        c(a(x), y).backward()
        d.zero_grad()
        d.step()
"""

CALLER = """\
import torch
from torch import nn
{imports}

def main():
    net = nn.Linear(4, 2)
    {call}

if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("imports", "call", "expected"), [
    ("from trainlib import fit", "fit(net, loader, nn.MSELoss(), torch.optim.SGD(net.parameters(), 0.1))", {"TRN101"}),
    ("import trainlib", "trainlib.fit(net, loader, nn.MSELoss(), d=torch.optim.Adam(net.parameters()))", {"TRN101"}),
    ("from trainlib import fit as run", "run(net, loader, nn.MSELoss(), torch.optim.SGD(net.parameters(), 0.1))",
     {"TRN101"}),
    ("from trainlib import fit", "fit(net, loader, nn.MSELoss(), Custom())", set()),  # not an optimizer
    ("from trainlib import fit", "fit(*everything)", set()),  # unknown
    ("from other import fit", "fit(net, loader, nn.MSELoss(), torch.optim.SGD(net.parameters(), 0.1))", set()),
])
def test_parameter_kinds_flow_from_calls_in_other_files(tmp_path: Path, imports: str, call: str,
                                                       expected: set[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "trainlib.py").write_text(TRAINLIB)
    (tmp_path / "other.py").write_text("def fit(a, b, c, d):\n    pass\n")
    (tmp_path / "main.py").write_text(CALLER.format(imports=imports, call=call))
    path = tmp_path / "trainlib.py"
    facts = ProjectFacts(ProjectIndex(), str(path))
    result = lint_source(TRAINLIB, str(path), {"TRN101"}, facts=facts)
    assert {f.code for f in result.findings} == expected
    callers = [str(tmp_path / "main.py")] if "trainlib" in imports else []
    assert ["importers", str(path), callers] in facts.deps


def test_callers_that_disagree_or_a_new_caller_are_seen(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "trainlib.py").write_text(TRAINLIB)
    (tmp_path / "main.py").write_text(CALLER.format(
        imports="from trainlib import fit", call="fit(net, loader, nn.MSELoss(), torch.optim.SGD(net.parameters()))"))
    path = str(tmp_path / "trainlib.py")
    index = ProjectIndex()
    facts = ProjectFacts(index, path)
    assert {f.code for f in lint_source(TRAINLIB, path, {"TRN101"}, facts=facts).findings} == {"TRN101"}
    assert index.still_valid(facts.deps)
    # A second file calls it with something else: the parameter is no longer known to be an optimizer.
    (tmp_path / "sweep.py").write_text("import trainlib\nif __name__ == '__main__':\n    trainlib.fit(m, l, c, object())\n")
    index.forget_files()
    assert not index.still_valid(facts.deps)
    facts = ProjectFacts(index, path)
    assert lint_source(TRAINLIB, path, {"TRN101"}, facts=facts).findings == []


def test_a_function_called_from_many_files_is_a_utility(tmp_path: Path) -> None:
    from lint_rules.analysis.cross_file import MAX_CALLER_FILES

    (tmp_path / ".git").mkdir()
    (tmp_path / "trainlib.py").write_text(TRAINLIB)
    for i in range(MAX_CALLER_FILES + 1):
        (tmp_path / f"main{i}.py").write_text(CALLER.format(
            imports="from trainlib import fit", call="fit(net, loader, nn.MSELoss(), torch.optim.SGD(ps))"))
    path = str(tmp_path / "trainlib.py")
    facts = ProjectFacts(ProjectIndex(), path)
    assert facts.call_kinds("fit") is None
    assert lint_source(TRAINLIB, path, {"TRN101"}, facts=facts).findings == []


def _all_rules(root: Path, *extra: str) -> set[tuple[str, int, str]]:
    """What the CLI reports in ``root`` (the whole tree, or the files among ``extra`` that end in .py)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    targets = [a for a in extra if a.endswith(".py")] or ["."]
    extra = tuple(a for a in extra if not a.endswith(".py"))
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--isolated", "--ignore", "TRN002",
                        "--format", "json", "--exit-zero", *extra, *targets],
                       cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return found(json.loads(r.stdout))


def test_a_user_project_split_into_model_data_train_and_main() -> None:
    """Issue #22's realistic layout: main.py builds everything and passes it to train.py's functions.

    Every planted bug is marked (TRN302 at main.py's call of data.py's build_loader(), whose loader
    draws from a DistributedSampler and is used every epoch). A plain lint reports the marked bugs
    not marked "(preview)";
    --preview all of them; the correct twin is clean with every rule on.
    """
    expected = marked(PROJECTS / "userproj")
    assert len(expected) == 14 and len({code for *_, code in expected}) == 13
    assert _all_rules(PROJECTS / "userproj", "--preview", "--select", "ALL") == expected
    # A plain lint reports every marked bug but those marked "preview" (only --preview finds them).
    preview_only = {m for m in expected if _preview_mark(PROJECTS / "userproj", m)}
    assert _all_rules(PROJECTS / "userproj") == expected - preview_only
    assert _all_rules(PROJECTS / "userproj_ok", "--preview", "--select", "ALL") == set()


DATA_PY = """
import torch
from torch.utils.data import DataLoader, DistributedSampler


def build(ds, shuffle=True):
    sampler = DistributedSampler(ds, shuffle={shuffle})
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    return loader
"""

RUN_PY = """
import torch
import data
from train_lib import fit, evaluate


def main(ds, epochs):
    batches = data.build(ds)
    for epoch in range(epochs):
{body}


if __name__ == "__main__":
    main(None, 3)
"""


@pytest.mark.parametrize(("shuffle", "body", "expected"), [
    ("True", "        fit(batches)", [8]),                                             # used every epoch
    ("True", "        batches.sampler.set_epoch(epoch)\n        fit(batches)", []),      # the epoch is set
    ("True", "        evaluate(batches)", []),                                         # only evaluated
    ("False", "        fit(batches)", []),                                              # no shuffle
])
def test_a_loader_built_in_another_file_carries_its_distributed_sampler(tmp_path: Path, shuffle, body,
                                                                       expected) -> None:
    (tmp_path / "data.py").write_text(DATA_PY.format(shuffle=shuffle))
    (tmp_path / "train_lib.py").write_text("def fit(b):\n    pass\n\n\ndef evaluate(b):\n    pass\n")
    (tmp_path / "run.py").write_text(RUN_PY.format(body=body))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--select", "TRN302", "--format",
                        "json", "--exit-zero", "run.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    found = [(f["code"], f["line"]) for f in json.loads(r.stdout)]
    assert found == [("TRN302", line) for line in expected]


# Facts behind a parameter, across files: main.py builds the objects, another file's function receives
# them as parameters of unknown kind. The names, the files and the call shapes vary; nothing tells the
# linter what a parameter holds but its callers.
PF_NETS = {
    "probs": """\
import torch.nn as nn
import torch.nn.functional as F

class {cls}(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return F.softmax(self.out(self.body(x)), dim=-1)
""",
    "logits": """\
import torch.nn as nn

class {cls}(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return self.out(x)
""",
}

PF_ENGINE = """\
import torch


def {fit}(a, b, c, d):
    for x, y in b:
        d.zero_grad()
        {loss_line}
        l.backward()
        d.step()


def {score}(m, b):
    hits = 0
    with torch.no_grad():
        for x, y in b:
            hits += (m(x).argmax(1) == y).sum()
    return hits
"""

PF_MAIN = """\
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
{imports}


def main():
    data = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=8)
    net = {ctor}
    net = {wrap}
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(3):
        {fit_call}
        print({score_call})


if __name__ == "__main__":
    main()
"""


def _project(tmp_path: Path, *, net: str, loss: str, cls: str = "Tagger", fit: str = "fit", score: str = "score",
             loss_line: str = "l = c(a(x), y)", models: str = "nets", engine: str = "engine",
             ctor: str = "{cls}()", wrap: str = "nn.DataParallel(net)", keyword: bool = False) -> Path:
    (tmp_path / f"{models}.py").write_text(PF_NETS[net].format(cls=cls))
    (tmp_path / f"{engine}.py").write_text(PF_ENGINE.format(fit=fit, score=score, loss_line=loss_line))
    fit_call = (f"{fit}(net, data, d=opt, c={loss})" if keyword else f"{fit}(net, data, {loss}, opt)")
    (tmp_path / "main.py").write_text(PF_MAIN.format(
        imports=f"from {models} import {cls}\nfrom {engine} import {fit}, {score}",
        ctor=ctor.format(cls=cls), wrap=wrap, fit_call=fit_call, score_call=f"{score}(net, data)"))
    return tmp_path


@pytest.mark.parametrize("variant", [
    dict(),
    dict(cls="Encoder", fit="run_epoch", score="validate", models="arch", engine="loops", keyword=True),
    dict(wrap="net.to('cpu')", loss="torch.nn.CrossEntropyLoss()"),
    dict(ctor="{cls}().float()", wrap="net"),
])
def test_a_model_and_a_loss_passed_from_main_reach_the_parameters_of_another_file(tmp_path: Path,
                                                                                   variant: dict) -> None:
    variant = {"loss": "nn.CrossEntropyLoss()", **variant}
    root = _project(tmp_path, net="probs", **variant)
    engine = variant.get("engine", "engine")
    got = {(path, code) for path, _, code in _all_rules(root) if path != "main.py"}
    # softmax output into the CrossEntropyLoss that main() passes; the model is mode-dependent (batch
    # norm) and its evaluation helper never sets eval(), nor does any caller
    assert got == {(f"{engine}.py", "TRN501"), (f"{engine}.py", "TRN602")}, got


@pytest.mark.parametrize(("net", "loss", "variant"), [
    ("logits", "nn.CrossEntropyLoss()", {}),  # the model returns logits: nothing to report
    ("probs", "nn.NLLLoss()", {}),  # another loss: not TRN501's
    ("probs", "nn.CrossEntropyLoss()", {"loss_line": "l = c(a(x).log(), y)"}),  # not the output itself
])
def test_parameter_facts_near_misses(tmp_path: Path, net: str, loss: str, variant: dict) -> None:
    root = _project(tmp_path, net=net, loss=loss, **variant)
    assert "TRN501" not in {code for *_, code in _all_rules(root)}


def test_callers_that_disagree_leave_a_parameter_unknown(tmp_path: Path) -> None:
    root = _project(tmp_path, net="probs", loss="nn.CrossEntropyLoss()")
    # a second script passes a model of a class nobody can see, and evaluates after eval()
    (root / "other.py").write_text(
        "from elsewhere import Mystery\nfrom engine import fit, score\n\n\nif __name__ == '__main__':\n"
        "    net = Mystery()\n    net.eval()\n    fit(net, [], Mystery(), None)\n    score(net, [])\n")
    assert {code for path, _, code in _all_rules(root) if path == "engine.py"} == set()


def test_summary_records_the_facts_of_module_arguments(tmp_path: Path) -> None:
    root = _project(tmp_path, net="probs", loss="nn.CrossEntropyLoss()")
    from lint_rules.analysis.summary import summarise_source

    calls = {c[0]: c for c in summarise_source((root / "main.py").read_text())["calls"]}
    # [mode-dependent, class, output] per module argument; the imported class is named for the reader
    assert calls["fit"][5] == [[None, "Tagger", None], None, [False, "torch.nn.CrossEntropyLoss", None], None]
    assert calls["fit"][2] == ["module", "loader", "criterion", "optimizer"]
    facts = ProjectFacts(ProjectIndex(), str(root / "engine.py"))
    from lint_rules.analysis.kinds import ARG_CLASS, ARG_MODE, ARG_OUTPUT

    assert facts.call_facts(ARG_MODE)("fit") == [([True, None, False, None], {})]
    assert facts.call_facts(ARG_OUTPUT)("score") == [(["softmax", None], {})]
    assert facts.call_facts(ARG_CLASS)("fit")[0][0][2] == "torch.nn.CrossEntropyLoss"
    assert facts.passed_classes() == {"torch.nn.CrossEntropyLoss"}


def test_a_trainer_hierarchy_split_across_files() -> None:
    """Methods reached through class hierarchies across files: engine/runner.py's fit() steps its scheduler
    before the abstract run_epoch() that both subclasses in loops/ implement with an optimizer step;
    train.py's trainer inherits train_one_epoch(), forget_grads() and apply_update() from engine/steps.py.
    Every planted bug is found by a plain lint (certain), each file linted alone too; the twin, whose
    fixes are partly in the *other* file (engine/steps.py), is clean with every rule on."""
    root = PROJECTS / "epochloop"
    expected = marked(root)
    assert {code for *_, code in expected} == {"TRN801", "TRN101", "TRN102"}
    assert _all_rules(root, "--preview", "--select", "ALL") == expected
    assert _all_rules(root) == expected
    for rel in sorted({path for path, _, _ in expected}):
        assert {m for m in _all_rules(root, rel) if m[0] == rel} == {m for m in expected if m[0] == rel}
    assert _all_rules(PROJECTS / "epochloop_ok", "--preview", "--select", "ALL") == set()


def test_a_lightning_module_base_of_another_file_registers_nothing_by_name(tmp_path: Path) -> None:
    import libcst as cst

    from lint_rules.analysis.model import FileModel

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "base.py").write_text(
        "import torch\nimport pytorch_lightning as pl\nimport lightning as L\nfrom somewhere import Mixin\n"
        "class Base(pl.LightningModule):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('mask', torch.ones(2))\n"
        "class Other(L.LightningModule):\n    pass\n"
        "class Mixed(Mixin):\n    pass\n")
    source = "from base import Base, Other, Mixed\n"
    path = tmp_path / "trainer.py"
    model = FileModel(cst.parse_module(source))
    facts = ProjectFacts(ProjectIndex(), str(path))
    names = {a.name.value: a.name for stmt in model.module.body for small in stmt.body
             for a in small.names}
    assert facts.registered_names(model, names["Base"]) == {"mask"}
    assert facts.registered_names(model, names["Other"]) == set()
    assert facts.registered_names(model, names["Mixed"]) is None  # a base outside the project: unknown


INFERENCE_UTILS = """\
import torch
def {name}(new_torch=True):
    def wrap(fn):
        return ({choice})()(fn)
    return wrap
"""

SUBFOLDER_SCRIPT = """\
import sys
import torch
from pathlib import Path
sys.path.append(str(Path(__file__).parents[1]))
from helpers.grad import {name}

@{name}()
def run(model, loader):
    model.eval()
    for images, labels in loader:
        print(model(images).argmax(1))
"""


@pytest.mark.parametrize(("name", "choice", "marker", "expected"), [
    # either context the factory picks turns grad off, and the script in a sub-folder imports it from the
    # project root, which a requirements file marks
    ("smart_no_grad", "torch.inference_mode if new_torch else torch.no_grad", "requirements.txt", set()),
    ("quiet_mode", "torch.no_grad if new_torch else torch.inference_mode", "setup.cfg", set()),
    # one branch records: the decorator does not decide
    ("maybe_grad", "torch.no_grad if new_torch else torch.enable_grad", "requirements.txt", {"TRN601"}),
])
def test_a_decorator_of_another_folder_that_picks_a_no_grad_context(
        tmp_path: Path, name: str, choice: str, marker: str, expected: set[str]) -> None:
    (tmp_path / marker).write_text("")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "grad.py").write_text(INFERENCE_UTILS.format(name=name, choice=choice))
    script = tmp_path / "detect" / "predict.py"
    script.parent.mkdir()
    result = lint_source(SUBFOLDER_SCRIPT.format(name=name), str(script), {"TRN601"},
                         facts=ProjectFacts(ProjectIndex(), str(script)))
    assert {f.code for f in result.findings} == expected


EVALUATION_MODULE = """\
import torch
def {fn}(net, batches):
    net.eval()
    hits = 0
    for inputs, targets in batches:
        hits += (net(inputs).argmax(1) == targets).sum().item()
    return hits
"""

TRAINING_MODULE = """\
import torch
from {module} import {fn}
def fit(net, train_batches, val_batches, opt):
    for inputs, targets in train_batches:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(inputs), targets).backward()
        opt.step()
{call}
"""


@pytest.mark.parametrize(("module", "fn", "call", "expected"), [
    # the caller is a module without a `__main__` block (a notebook imports it): its no_grad still counts
    ("checks", "validation", "    with torch.no_grad():\n        return validation(net, val_batches)", set()),
    ("scoring", "measure", "    with torch.inference_mode():\n        score = measure(net, val_batches)\n"
                           "    return score", set()),
    ("checks", "validation", "    return validation(net, val_batches)", {"TRN601"}),
])
def test_a_caller_that_is_not_a_script_turns_grad_off(tmp_path: Path, module: str, fn: str, call: str,
                                                      expected: set[str]) -> None:
    (tmp_path / "trainer.py").write_text(TRAINING_MODULE.format(module=module, fn=fn, call=call))
    path = tmp_path / f"{module}.py"
    path.write_text(EVALUATION_MODULE.format(fn=fn))
    result = lint_source(path.read_text(), str(path), {"TRN601"},
                         facts=ProjectFacts(ProjectIndex(), str(path)))
    assert {f.code for f in result.findings} == expected


def test_ancestor_bases_and_moved_by_trainer_follow_bases_across_files(tmp_path: Path) -> None:
    import libcst as cst

    from lint_rules.analysis.devices import moved_by_trainer
    from lint_rules.analysis.model import FileModel

    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "core" / "base.py").write_text(
        "import pytorch_lightning as pl\nclass Base(pl.LightningModule):\n    pass\n"
        "class Helper:\n    pass\n")
    (tmp_path / "core" / "mid.py").write_text(
        "from .base import Base, Helper\nclass Mid(Helper, Base):\n    pass\nclass Side(Helper):\n    pass\n")
    module = cst.parse_module(
        "from core.mid import Mid, Side\nclass Trainer(Mid):\n    pass\nclass Other(Side):\n    pass\n")
    model = FileModel(module)
    model.project_facts = ProjectFacts(ProjectIndex(), str(tmp_path / "train.py"))
    trainer, other = (s for s in module.body[1:])
    assert sorted(model.project_facts.ancestor_bases(model, trainer.bases[0].value)) == \
        ["Base", "Helper", "pl.LightningModule"]
    assert model.project_facts.ancestor_bases(model, other.bases[0].value) == ["Helper"]
    assert moved_by_trainer(model, trainer) and not moved_by_trainer(model, other)
