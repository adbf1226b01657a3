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


# ---------------------------------------------------------------- which def `self.<method>()` runs
HIERARCHY = """
class Engine:
    def run_epoch(self):
        return "engine"

class Loop(Engine):
    def fit(self):
        self.run_epoch()          # inherited from Engine
        self.hook()               # a stub here, one implementation below
        self.score()              # a stub with two implementations: unknown
        self.log()                # nowhere

    def hook(self):
        raise NotImplementedError

    def score(self):
        "Implemented by subclasses."
        ...

class Shadowed(Loop):
    run_epoch = None

    def again(self):
        self.run_epoch()          # bound to a value here: not the base's def
        self.fit()                # two levels up

class Impl(Loop):
    def hook(self):
        return 1

    def score(self):
        return 2

class Other(Loop):
    def score(self):
        return 3
"""


def _called(source: str) -> dict[str, str | None]:
    """Each `self.<m>()` call's target, as '<class>.<method>' of the def found, or None."""
    model = FileModel(cst.parse_module(textwrap.dedent(source)))
    classes = {id(fn): cls.name.value for cls in model.nodes(cst.ClassDef) for fn in cls.body.body
               if isinstance(fn, cst.FunctionDef)}
    out = {}
    for call in model.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            fn = model.local_function(func)
            caller = model.enclosing_function(call).name.value
            out[f"{caller}:{func.attr.value}"] = None if fn is None else f"{classes[id(fn)]}.{fn.name.value}"
    return out


def test_a_method_call_reaches_the_base_class_def_or_the_one_implementation_of_a_stub() -> None:
    assert _called(HIERARCHY) == {
        "fit:run_epoch": "Engine.run_epoch",
        "fit:hook": "Impl.hook",
        "fit:score": None,
        "fit:log": None,
        "again:run_epoch": None,
        "again:fit": "Loop.fit",
    }


def test_a_base_named_like_no_class_of_the_file_is_not_followed() -> None:
    source = """
    from elsewhere import Base
    class Loop(Base):
        def fit(self):
            self.step_all()
    class Base2:
        def step_all(self):
            pass
    """
    assert _called(source) == {"fit:step_all": None}


def test_an_unbound_torch_still_names_the_torch_package() -> None:
    # `import torch.nn as nn` binds no `torch`; a star import may bring it: the name means torch
    model = FileModel(cst.parse_module("import torch.nn as nn\nfrom helpers import *\nwith torch.no_grad():\n    pass\n"))
    block = model.nodes(cst.With)[0]
    assert model.qualified_name(block.items[0].item.func) == "torch.no_grad"
    assert model.in_no_grad(block.body.body[0])


def test_subtree_yields_the_node_and_everything_below_it() -> None:
    import libcst as cst

    from lint_rules.analysis.scopes import subtree

    expr = cst.parse_expression("f(a, b.c)")
    names = sorted(n.value for n in subtree(expr) if isinstance(n, cst.Name))
    assert names == ["a", "b", "c", "f"]
    assert next(iter(subtree(expr))) is expr
