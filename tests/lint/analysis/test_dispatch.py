"""Which functions ``self.<method>()`` may run: every implementation, in this file and in the project's others."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from lint_rules.analysis.cross_file import ProjectFacts
from lint_rules.analysis.dispatch import Dispatch, ForeignMethod
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.project_index import MAX_SUBCLASS_FILES, ProjectIndex


def _model(source: str, path: Path | None = None) -> FileModel:
    model = FileModel(cst.parse_module(textwrap.dedent(source)))
    if path is not None:
        model.project_facts = ProjectFacts(ProjectIndex(), str(path))
    return model


def _targets(model: FileModel, caller: str, method: str) -> list[str] | None:
    """What ``self.<method>()`` in the def ``caller`` may run, as '<class>.<method>' (a class of
    another file as '<file stem>:<class>.<method>'), sorted; None when unknown."""
    classes = {id(fn): cls.name.value for cls in model.nodes(cst.ClassDef) for fn in cls.body.body
               if isinstance(fn, cst.FunctionDef)}
    call = next(c for c in model.nodes(cst.Call)
                if isinstance(c.func, cst.Attribute) and c.func.attr.value == method
                and model.enclosing_function(c).name.value == caller)
    found = model.fact(Dispatch).targets(call.func)
    if found is None:
        return None
    return sorted(f"{Path(t.path).stem}:{t.cls}.{t.name}" if isinstance(t, ForeignMethod)
                  else f"{classes[id(t)]}.{t.name.value}" for t in found)


# ------------------------------------------------------------------------- within one file
TEMPLATE = """
class Runner:
    def run(self):
        self.epoch()         # missing here: every subclass's
        self.hook()          # a stub: its implementations
        self.ready()         # defined here, whatever the subclasses do
        self.net()           # an attribute of the instance, no method
        self.reset()         # a subclass binds it to a value

    def hook(self):
        pass

    def ready(self):
        return True

    def __init__(self, net):
        self.net = net

class A(Runner):
    def epoch(self):
        return 1

    def hook(self):
        return "a"

class B(A):
    def epoch(self):
        return 2

    def ready(self):
        return False

    reset = None

class C(Runner):
    def hook(self):
        "Declared again, still a stub."
        raise NotImplementedError
"""


def test_a_missing_or_stub_method_runs_every_implementation_of_the_subclasses() -> None:
    model = _model(TEMPLATE)
    assert _targets(model, "run", "epoch") == ["A.epoch", "B.epoch"]
    assert _targets(model, "run", "hook") == ["A.hook"]  # C's stub is no implementation
    assert _targets(model, "run", "ready") == ["Runner.ready"]
    assert _targets(model, "run", "net") is None
    assert _targets(model, "run", "reset") is None


def test_a_base_class_outside_the_file_may_define_what_the_file_lacks() -> None:
    model = _model("""
        import torch
        class Net(torch.nn.Module):
            def go(self):
                self.train()
                self.helper()
        class Sub(Net):
            def train(self):
                return 1
    """)
    assert _targets(model, "go", "train") is None  # nn.Module.train runs for a Net
    assert _targets(model, "go", "helper") is None


def test_a_cycle_of_base_classes_ends() -> None:
    model = _model("""
        class A(B):
            def go(self):
                self.step_all()
        class B(A):
            def step_all(self):
                raise NotImplementedError
    """)
    assert _targets(model, "go", "step_all") is None


# ------------------------------------------------------------------------- across files
BASE = """
class BaseTrainer:
    def train(self):
        for epoch in range(10):
            self._train_epoch(epoch)
            self.log()

    def _train_epoch(self, epoch):
        raise NotImplementedError

    def log(self):
        print("done")
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_stub_of_a_base_file_runs_the_implementations_of_other_project_files(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pyproject.toml": "",
        "core/__init__.py": "",
        "core/base_trainer.py": BASE,
        "trainers/__init__.py": "",
        # three spellings of the base class, and a subclass of a subclass in a third file
        "trainers/seg.py": "from core.base_trainer import BaseTrainer\n"
                           "class SegTrainer(BaseTrainer):\n    def _train_epoch(self, epoch):\n        return 1\n",
        "trainers/det.py": "import core.base_trainer as bt\n"
                           "class DetTrainer(bt.BaseTrainer):\n    pass\n"
                           "class FastDet(DetTrainer):\n    def _train_epoch(self, epoch):\n        return 2\n",
        "trainers/fine.py": "from trainers.seg import SegTrainer\n"
                            "class FineSeg(SegTrainer):\n    def _train_epoch(self, epoch):\n        return 3\n",
        # names the class without deriving from it
        "tools/report.py": "from core.base_trainer import BaseTrainer\nprint(BaseTrainer)\n",
    })
    path = tmp_path / "core/base_trainer.py"
    model = _model(BASE, path)
    assert _targets(model, "train", "_train_epoch") == ["det:FastDet._train_epoch", "fine:FineSeg._train_epoch",
                                                        "seg:SegTrainer._train_epoch"]
    assert _targets(model, "train", "log") == ["BaseTrainer.log"]  # defined here: no search
    deps = model.project_facts.deps
    assert ["subclasses", str(path), "BaseTrainer",
            [str(tmp_path / "tools/report.py"), str(tmp_path / "trainers/det.py"),
             str(tmp_path / "trainers/seg.py")]] in deps


def test_a_subclass_that_binds_the_name_to_a_value_makes_the_call_unknown(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pyproject.toml": "",
        "base.py": BASE,
        "one.py": "from base import BaseTrainer\nclass One(BaseTrainer):\n    def _train_epoch(self, e):\n        pass\n"
                  "    def done(self):\n        return 1\n",
        "two.py": "from base import BaseTrainer\nclass Two(BaseTrainer):\n    _train_epoch = staticmethod(print)\n",
    })
    model = _model(BASE, tmp_path / "base.py")
    assert _targets(model, "train", "_train_epoch") is None


def test_too_many_files_naming_the_class_is_unknown(tmp_path: Path) -> None:
    files = {"pyproject.toml": "", "base.py": BASE}
    for i in range(MAX_SUBCLASS_FILES + 1):
        files[f"t{i}.py"] = ("from base import BaseTrainer\n"
                             f"class T{i}(BaseTrainer):\n    def _train_epoch(self, e):\n        return {i}\n")
    _write(tmp_path, files)
    model = _model(BASE, tmp_path / "base.py")
    assert _targets(model, "train", "_train_epoch") is None


STEPS = """
class Steps:
    def fit_epoch(self):
        return 1

    def declared(self):
        raise NotImplementedError

class Mid(Steps):
    pass
"""


def test_a_method_inherited_from_a_base_class_of_another_file(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": "", "lib/steps.py": STEPS, "lib/__init__.py": "from .steps import Mid\n"})
    source = """
        import torch
        from lib import Mid
        class Mine(Mid):
            def run(self):
                self.fit_epoch()     # Steps.fit_epoch, two files and one class up
                self.declared()      # a stub there: this file's subclass implements it
                self.unknown()       # no class binds it, every class is the project's
        class Impl(Mine):
            def declared(self):
                return 2
        class Outside(torch.nn.Module):
            def run(self):
                self.fit_epoch()     # torch's class may define it
    """
    model = _model(source, tmp_path / "train.py")
    assert _targets(model, "run", "fit_epoch") == ["steps:Steps.fit_epoch"]
    assert _targets(model, "run", "declared") == ["Impl.declared"]
    assert _targets(model, "run", "unknown") is None
    runs = [c for c in model.nodes(cst.Call) if model.module.code_for_node(c) == "self.fit_epoch()"]
    assert model.fact(Dispatch).targets(runs[1].func) is None


def test_base_classes_that_derive_from_each_other_across_files_end(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": "",
                      "a.py": "from b import B\nclass A(B):\n    pass\n",
                      "b.py": "from a import A\nclass B(A):\n    pass\n"})
    model = _model("from a import A\nclass C(A):\n    def go(self):\n        self.x()\n", tmp_path / "c.py")
    assert _targets(model, "go", "x") is None
