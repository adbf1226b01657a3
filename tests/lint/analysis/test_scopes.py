"""ScopeModel's position indexes: span(), within(), sorted_within() and owned() answer what a scan
of every node of the file with is_inside()/enclosing_function() would."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel

SOURCE = """
import torch

class Net(torch.nn.Module):
    def forward(self, x):
        return [f(v) for v in x if g(v)]

def train(model, loader, opt):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x)
        if loss is None:
            continue
        while retry(loss):
            loss = (lambda t: t.mean())(loss)
        loss.backward()
    def inner():
        opt.step()
    return inner

for epoch in range(2):
    train(model, loader, opt)
"""


def _model() -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(SOURCE)))


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    out, stack = [], [module]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children)
    return out


def test_within_matches_a_scan_for_every_container() -> None:
    model = _model()
    types = (cst.Call, cst.For, cst.While, cst.Assign, cst.FunctionDef, cst.Lambda, cst.If, cst.With)
    containers = _all_nodes(model.module)  # nodes of the walk and blocks, tests, arguments alike
    assert len(containers) > 100
    for container in containers:
        for tp in types:
            expected = [n for n in model.nodes(tp) if model.is_inside(n, container)]
            assert model.within(tp, container) == expected, (tp, container)


def test_span_is_the_run_of_ordered_nodes_inside() -> None:
    model = _model()
    for node in (model.module, *model.ordered):
        lo, hi = model.span(node)
        inside = [i for i, n in enumerate(model.ordered) if model.is_inside(n, node)]
        assert list(range(lo, hi)) == inside
        assert model.span(node) == (lo, hi)  # memoised: the same answer again


def test_owned_groups_nodes_by_enclosing_function() -> None:
    model = _model()
    functions = [None, *model.nodes(cst.FunctionDef), *model.nodes(cst.Lambda)]
    for tp in (cst.Call, cst.Assign, cst.For):
        for fn in functions:
            assert model.owned(tp, fn) == [n for n in model.nodes(tp) if model.enclosing_function(n) is fn]
        assert sum(len(model.owned(tp, fn)) for fn in functions) == len(model.nodes(tp))


def test_nothing_of_a_type_the_walk_did_not_collect() -> None:
    model = _model()
    assert model.within(cst.Subscript, model.module) == []  # no rule asked for Subscript nodes
    assert model.owned(cst.Subscript, None) == []
