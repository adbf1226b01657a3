"""TrainingFacts answers each loop's and function's questions from indexes, not by scanning every
event of the file: the events visited over a whole lint grow with the file, not with its square."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis import training
from lint_rules.analysis.model import FileModel
from lint_rules.api import Settings, lint_text
from tests.lint.training_files import training_file


class _CountingList(list):
    """A list that counts the items handed out by iterating over it (slices are plain lists)."""

    visited = 0

    def __iter__(self):
        for item in list.__iter__(self):
            _CountingList.visited += 1
            yield item


_INIT = training.TrainingFacts.__init__


def _counting_init(self, model) -> None:
    _INIT(self, model)
    self.events = _CountingList(self.events)


def _events_visited(source: str, monkeypatch) -> int:
    """Events that every rule and analysis together read by iterating over ``TrainingFacts.events``."""
    monkeypatch.setattr(training.TrainingFacts, "__init__", _counting_init)
    _CountingList.visited = 0
    settings = Settings.resolve(isolated=True, select=["ALL"], preview=True)
    result = lint_text(source, "train.py", settings)
    assert result.error is None and result.findings  # the file was linted, and rules ran on it
    return _CountingList.visited


def test_events_visited_grow_linearly_with_the_training_functions(monkeypatch) -> None:
    # Each rule reading every event of the file once per loop, step or scheduler made this
    # ratio about 4 at 2x the functions (issue #24: 1,300 functions 6 s, 2,600 functions 28 s).
    small = _events_visited(training_file(50), monkeypatch)
    large = _events_visited(training_file(100), monkeypatch)
    assert small > 0
    assert large / small < 2.1, (small, large)


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def test_events_within_between_and_of_a_function_match_a_scan() -> None:
    model = _model("""
        def fit(model, loader, opt, sched):
            for epoch in range(3):
                for x, y in loader:
                    opt.zero_grad()
                    if x is None:
                        continue
                    model(x).sum().backward()
                    opt.step()
                sched.step()
            closure = lambda: model(x).sum().backward()
            opt.step(closure)
        for x in loader:
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    facts = model.training
    events = facts.events
    assert len(events) == 8
    containers = [*model.nodes(cst.For), *model.nodes(cst.If), *model.nodes(cst.Lambda),
                  *model.nodes(cst.FunctionDef), model.module]
    containers += [c.body for c in model.nodes(cst.For)]  # blocks: not nodes of the walk
    for container in containers:
        assert facts.events_within(container) == [e for e in events if model.is_inside(e.node, container)]
    for fn in (None, *model.nodes(cst.FunctionDef), *model.nodes(cst.Lambda)):
        assert facts.function_events(fn) == [e for e in events if model.enclosing_function(e.node) is fn]
        region = model.module if fn is None else fn
        assert facts.region_events(region) == [e for e in events if facts._region_of_function(e.node) is region]
    for start in range(-1, len(model.ordered) + 1):
        for end in (start + 1, start + 7, len(model.ordered)):
            assert facts.events_between(start, end) == [e for e in events if start < e.index < end]


def test_a_gradient_reset_that_picks_its_parameters_is_no_clear() -> None:
    # Resetting the gradients of parameters picked by name freezes those; resetting every gradient
    # (whether or not it exists, or only of parameters that train) clears the step's gradients.
    model = FileModel(cst.parse_module(textwrap.dedent("""
        def step(model, loss, opt, frozen):
            loss.backward()
            for name, p in model.named_parameters():
                if "prototypes" in name:
                    p.grad = None
            for name, w in model.named_parameters():
                if name in frozen:
                    w.grad.zero_()
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
            for q in model.parameters():
                if q.requires_grad:
                    q.grad = None
            for r in model.parameters():
                r.grad = None
            opt.step()
    """)))
    facts = training.TrainingFacts(model)
    clears = [model.module.code_for_node(e.node).strip() for e in facts.events if e.kind == training.CLEAR]
    assert clears == ["p.grad.zero_()", "q.grad = None", "r.grad = None"]
