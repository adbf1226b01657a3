"""Grad mode at a point: one answer (GradMode.disabled_at, FileModel.in_no_grad) for every rule."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from lint_rules.analysis.cross_file import ProjectFacts
from lint_rules.analysis.grad_mode import GradMode
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.project_index import ProjectIndex
from lint_rules.analysis.summary import summarise_source


def _model(src: str, path: Path | None = None) -> FileModel:
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    if path is not None:
        model.project_facts = ProjectFacts(ProjectIndex(), str(path))
    return model


def _calls(model: FileModel, text: str) -> list[cst.Call]:
    return [c for c in model.nodes(cst.Call) if model.module.code_for_node(c) == text]


def test_exit_stack_and_callers() -> None:
    model = _model("""
        import contextlib
        import torch
        def run(model, x):
            with contextlib.ExitStack() as stack:
                before = model(x)
                stack.enter_context(torch.no_grad())
                after = model(x)
        def helper(model, x):
            return model(x)
        def caller(model, x):
            with torch.no_grad():
                helper(model, x)
        def other(model, x):
            return model(x)
        def caller2(model, x):
            with torch.no_grad():
                other(model, x)
            other(model, x)
        """)
    before, after, in_helper, in_other = _calls(model, "model(x)")
    assert not model.in_no_grad(before)
    assert model.in_no_grad(after)
    assert model.in_no_grad(in_helper)
    assert not model.in_no_grad(in_other)  # one caller runs it with grad enabled


@pytest.mark.parametrize(("src", "disabled"), [
    ("with torch.no_grad():\n    with torch.enable_grad():\n        f(x)", False),  # the nearest mode wins
    ("@torch.no_grad()\ndef g():\n    with torch.enable_grad():\n        f(x)", False),
    ("with torch.inference_mode(False):\n    f(x)", False),
    ("with torch.set_grad_enabled(False):\n    f(x)", True),
    ("@torch.inference_mode()\ndef g():\n    f(x)", True),
    ("def g():\n    f(x)\nwith torch.no_grad():\n    g()", True),  # its only caller
    ("def g():\n    f(x)", False),  # never called: unknown, so grad is on
])
def test_nearest_context_decorators_and_callers(src: str, disabled: bool) -> None:
    model = _model("import torch\n" + src + "\n")
    (call,) = _calls(model, "f(x)")
    assert model.in_no_grad(call) is disabled
    assert GradMode(model).disabled_at(call) is disabled


def test_decorators_and_context_managers_of_this_file() -> None:
    model = _model("""
        import contextlib
        import functools
        import torch
        def evaluation(fn):
            @functools.wraps(fn)
            def wrapper(*a, **k):
                with torch.inference_mode():
                    return fn(*a, **k)
            return wrapper
        def frozen(fn):
            @torch.no_grad
            def wrapper(*a, **k):
                return fn(*a, **k)
            return wrapper
        @contextlib.contextmanager
        def evaluating():
            with torch.no_grad():
                yield
        def logged(fn):
            return fn
        @evaluation
        def a(): f(1)
        @frozen
        def b(): f(2)
        def c():
            with evaluating():
                f(3)
        @logged
        def d(): f(4)
        """)
    verdicts = [model.in_no_grad(_calls(model, f"f({i})")[0]) for i in range(1, 5)]
    assert verdicts == [True, True, True, False]


UTILS = """\
import functools
import torch


def inference(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch.inference_mode():
            return fn(*args, **kwargs)
    return wrapper


def timed(fn):
    return fn
"""


@pytest.mark.parametrize(("decorator", "disabled"), [
    ("@utils.inference", True), ("@inference", True), ("@timed", False), ("@utils.timed", False),
])
def test_a_decorator_of_another_project_file(tmp_path: Path, decorator: str, disabled: bool) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "utils.py").write_text(UTILS)
    model = _model(f"""
        import utils
        from utils import inference, timed
        {decorator}
        def evaluate(model, x):
            return model(x)
        """, tmp_path / "evaluate.py")
    (call,) = _calls(model, "model(x)")
    assert model.in_no_grad(call) is disabled


def test_summary_lists_the_functions_that_turn_grad_off() -> None:
    summary = summarise_source(UTILS + textwrap.dedent("""
        @torch.no_grad()
        def predict(model, x):
            return model(x)
        def train(model, x):
            return model(x)
        """))
    assert summary["no_grad"] == ["inference", "predict"]


def test_set_grad_enabled_managed_and_switched_off_before() -> None:
    model = _model("""
        import torch
        def run(phase, model, x):
            with torch.set_grad_enabled(phase == "train"):
                f(1)
            f(2)
        def frozen(model, x):
            f(3)
            torch.set_grad_enabled(False)
            f(4)
        def other():
            f(5)
        """)
    modes = GradMode(model)
    calls = [_calls(model, f"f({i})")[0] for i in range(1, 6)]
    assert [modes.managed(c) for c in calls] == [True, False, False, False, False]
    assert [modes.set_before(c) for c in calls] == [False, False, False, True, False]
    late = _model("import torch\nf(1)\ntorch.set_grad_enabled(False)\nf(2)\n")
    assert [GradMode(late).set_before(_calls(late, f"f({i})")[0]) for i in (1, 2)] == [False, True]


def test_no_grad_entered_by_hand_switches_grad_off_for_what_follows() -> None:
    model = _model("""
        import torch
        from torch import inference_mode
        def scored(model, x):
            f(1)
            torch.no_grad().__enter__()
            f(2)
        def inferred(model, x):
            inference_mode().__enter__()
            f(3)
        def enabled(model, x):
            torch.enable_grad().__enter__()
            f(4)
            ctx = torch.no_grad()
            f(5)
        """)
    modes = GradMode(model)
    # entering enable_grad, or building a no_grad object without entering it, switches nothing off
    assert [modes.set_before(_calls(model, f"f({i})")[0]) for i in range(1, 6)] == [False, True, True, False, False]


def test_left_to_callers_when_nothing_here_calls_or_trains() -> None:
    from lint_rules.analysis.grad_mode import left_to_callers

    model = _model("""
        import torch
        import functools
        from somewhere import inference_only
        def helper(model):
            model.mark(1)                         # nothing here calls helper: its callers decide
        def fit(model, loader):
            for x in loader:
                model(x).sum().backward()
                model.mark(2)                     # trains: grad is on
        @inference_only
        def served(model):
            model.mark(3)                         # another package's decorator may set the mode
        @functools.lru_cache()
        def cached(model):
            model.mark(4)
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mark(5)                      # constructors run with grad on
                self.reset()
            def reset(self):
                self.mark(6)                      # called from __init__
        cached(None)
        model.mark(7)
        """)
    marks = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "mark"]
    assert [left_to_callers(model, c) for c in marks] == [True, False, True, False, False, False, False]
