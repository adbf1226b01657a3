"""Iteration context: the loops a node runs in every iteration, and where the walk stopped."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.frequency import iteration_context
from lint_rules.analysis.guards import is_rare_condition
from lint_rules.analysis.model import FileModel

_SRC = """
def train(loader, closure_opt):
    for epoch in range(3):
        for step, batch in enumerate(loader):
            mark("every step")
            if step % 100 == 0:
                mark("logging")
        mark("per epoch")
    for x in mark("header"):
        pass
    def closure():
        mark("in closure")
    closure_opt.step(closure)
"""


def _marks(model: FileModel) -> dict[str, cst.Call]:
    return {c.args[0].value.evaluated_value: c for c in model.nodes(cst.Call)
            if isinstance(c.func, cst.Name) and c.func.value == "mark"}


def _context(model: FileModel, node: cst.CSTNode, through=()):
    return iteration_context(model, node, lambda guard: is_rare_condition(guard.test), walk_through=through)


def test_loops_and_stops() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    marks = _marks(model)
    fors = {model.module.code_for_node(f.target): f for f in model.nodes(cst.For)}
    train = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "train")
    closure = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "closure")

    every = _context(model, marks["every step"])
    assert every.loops == (fors["step, batch"], fors["epoch"]) and every.stop is train

    logging = _context(model, marks["logging"])
    assert logging.loops == () and isinstance(logging.stop, cst.If)

    assert _context(model, marks["per epoch"]).loops == (fors["epoch"],)

    header = _context(model, marks["header"])
    assert header.loops == () and header.stop is fors["x"]

    assert _context(model, marks["in closure"]).stop is closure
    assert _context(model, marks["in closure"], {id(closure)}).stop is train
