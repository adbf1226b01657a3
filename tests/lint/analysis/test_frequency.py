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


_ELEMENTS_SRC = """
import torch
def step(net, feats, targets, loader, named_losses, chunks, env):
    logits = net(feats)
    grads = [w.grad for w in net.parameters() if w.grad is not None]
    for row in logits: pass
    for a, b in zip(logits, targets): pass
    for i, a in enumerate(torch.softmax(logits, -1)): pass
    for i in range(len(logits)): pass
    for i in range(logits.size(0)): pass
    for i in range(0, logits.shape[0]): pass
    for w in net.parameters(): pass
    for name, w in net.named_parameters(): pass
    for g in grads: pass
    for key, value in named_losses.items(): pass
    for batch in loader: pass
    for part in chunks: pass
    for t in range(env.horizon): pass
    for i in range(len(named_losses)): pass
    while env.running: pass
"""


def test_walks_elements_of_tensors_and_parameters_only() -> None:
    from lint_rules.analysis.frequency import walks_elements

    model = FileModel(cst.parse_module(textwrap.dedent(_ELEMENTS_SRC)))
    loops = model.nodes(cst.For) + model.nodes(cst.While)
    walked = {model.module.code_for_node(lp.iter) if isinstance(lp, cst.For) else "while": walks_elements(model, lp)
              for lp in loops}
    assert walked == {
        "logits": True, "zip(logits, targets)": True, "enumerate(torch.softmax(logits, -1))": True,
        "range(len(logits))": True, "range(logits.size(0))": True, "range(0, logits.shape[0])": True,
        "net.parameters()": True, "net.named_parameters()": True, "grads": True,
        # a handful of named values, batches, opaque lists, time steps: not one iteration per element
        "named_losses.items()": False, "loader": False, "chunks": False, "range(env.horizon)": False,
        "range(len(named_losses))": False, "while": False,
    }


_COMPOUNDS_SRC = """
for epoch in range(3):
    net = wrap(net)                      # compounds
    self.head = wrap(module=self.head)   # compounds
for epoch in range(3):
    net = build()
    net = wrap(net)                      # rebuilt first: afresh
for epoch in range(3):
    if epoch == 0:
        net = wrap(net)                  # once, under a condition
net = wrap(net)                          # no loop
for epoch in range(3):
    other = wrap(net)                    # another name
"""


def test_compounds_each_iteration() -> None:
    from lint_rules.analysis.frequency import compounds_each_iteration

    model = FileModel(cst.parse_module(textwrap.dedent(_COMPOUNDS_SRC)))
    got = []
    for call in model.nodes(cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == "wrap":
            assign = model.parent(call)
            got.append(compounds_each_iteration(model, assign, call.args[0].value))
    assert got == [True, True, False, False, False, False]
