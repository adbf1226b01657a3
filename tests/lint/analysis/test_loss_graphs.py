"""Which values hold an autograd graph, which names feed backward(), and rebinding on every path
(analysis/loss_graphs.py), asked of the facts directly."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.loss_graphs import LossGraphs
from lint_rules.analysis.model import FileModel


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)), frozenset({cst.Name, cst.Attribute}))


def _arg_of(model: FileModel, func: str) -> list[cst.CSTNode]:
    return [c.args[0].value for c in model.nodes(cst.Call)
            if isinstance(c.func, cst.Name) and c.func.value == func]


def test_holds_no_graph_follows_no_grad_and_plain_numbers() -> None:
    model = _model("""
        import torch
        import torch.nn.functional as F
        def f(model, loader, criterion):
            for x, y in loader:
                with torch.no_grad():
                    quiet = criterion(model(x), y)
                loud = criterion(model(x), y)
                mixed = quiet + loud
                probe(quiet)
                probe(loud)
                probe(mixed)
                probe(quiet * 2 + 1)
                probe(F.cross_entropy(x, y))
                probe(F.cross_entropy(model(x), y))
    """)
    graphs = model.fact(LossGraphs)
    assert model.fact(LossGraphs) is graphs
    # F.cross_entropy(x, y): every tensor it reads is a batch from the data; model(x) is not
    assert [graphs.holds_no_graph(e) for e in _arg_of(model, "probe")] == [True, False, False, True, True, False]


def test_feeds_backward_follows_assignments_in_the_same_scope() -> None:
    model = _model("""
        def step(model, x, y, criterion):
            total = 0
            running = 0
            loss = criterion(model(x), y)
            total = total + loss
            total.backward()
            running += loss
            probe(total)
            probe(running)
            probe(loss)
        def other(total):
            probe(total)
    """)
    graphs = model.fact(LossGraphs)
    assert [graphs.feeds_backward(e) for e in _arg_of(model, "probe")] == [True, False, True, False]


def test_rebound_before_needs_every_path() -> None:
    model = _model("""
        def f(loader):
            total = 0
            for x in loader:
                total = 0
                total += x
            for x in loader:
                if x:
                    total = 0
                total += x
            for x in loader:
                total = total * 0
                total += x
    """)
    graphs = model.fact(LossGraphs)
    augs = model.nodes(cst.AugAssign)
    loops = [n for n in model.nodes(cst.For)]
    assert [graphs.rebound_before(a.target, a, loop) for a, loop in zip(augs, loops)] == [True, False, False]


def test_holds_backpropagated_entry_until_it_is_rebuilt() -> None:
    model = _model("""
        def f(outputs, history):
            out = compute()
            out["loss"].backward()
            history.append(out)
            out = compute()
            history.append(out)
        def g(history):
            res = compute()
            res["loss"].backward()
            res["loss"] = res["loss"].item()
            history.append(res)
    """)
    graphs = model.fact(LossGraphs)
    appends = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "append"]
    assert [graphs.holds_backpropagated_entry(c.args[0].value, c) for c in appends] == [True, False, False]
