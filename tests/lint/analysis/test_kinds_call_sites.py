"""Kinds flowing from a file's call sites into the parameters of the function they call."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.kinds import CRITERION, LOADER, MODULE, OPTIMIZER, SAMPLER, SCHEDULER
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.scopes import bind_arguments
from tests.lint.analysis.test_kinds_values import _all, _kind_of_last

# Parameter names chosen so that no name hint could tell their kind.
CALLER = """
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, DistributedSampler

    def main():
        net = nn.Sequential(nn.Linear(4, 2))
        sampler = DistributedSampler(data)
        feed = DataLoader(data, sampler=sampler)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 3)
        fit(net, feed, nn.CrossEntropyLoss(), opt, sched, f=sampler)

    def fit(a, b, c, d, e=None, *, f=None):  # after its caller, so that its uses are the last names
        a
        b
        c
        d
        e
        f
    """


@pytest.mark.parametrize(("name", "kind"), [
    ("a", MODULE), ("b", LOADER), ("c", CRITERION), ("d", OPTIMIZER), ("e", SCHEDULER), ("f", SAMPLER),
])
def test_each_parameter_gets_the_kind_its_one_call_site_passes(name: str, kind: str) -> None:
    assert _kind_of_last(CALLER, name) == kind


def test_call_sites_that_disagree_or_pass_the_unknown_leave_the_parameter_unknown() -> None:
    src = """
        import torch
        def step(p):
            p
        step(torch.optim.Adam(params))
        step(torch.nn.Linear(2, 2))
        def other(q):
            q
        other(torch.optim.Adam(params))
        other(something_else)
        def never_called(r):
            r
        """
    assert _kind_of_last(src, "p") is None
    assert _kind_of_last(src, "q") is None
    assert _kind_of_last(src, "r") is None


def test_methods_nested_callers_and_recursion() -> None:
    src = """
        import torch
        class Runner:
            def epoch(self, w):
                w
                self.epoch(w)  # recursion passes what it has
            def run(self):
                self.epoch(torch.optim.AdamW(ps))

        def outer(m):
            inner(m)
        def inner(k):
            k
        outer(torch.nn.Linear(1, 1))
        """
    assert _kind_of_last(src, "w") == OPTIMIZER
    assert _kind_of_last(src, "k") == MODULE  # through two calls


def test_annotation_and_default_come_before_call_sites() -> None:
    src = """
        import torch
        from torch.optim import Optimizer
        def f(x: Optimizer, y=torch.nn.MSELoss()):
            x
            y
        f(torch.nn.Linear(1, 1), torch.nn.Linear(1, 1))
        """
    assert _kind_of_last(src, "x") == OPTIMIZER
    assert _kind_of_last(src, "y") == CRITERION


def _calls_and_def(src: str):
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    fns = {fn.name.value: fn for fn in _all(model.module, cst.FunctionDef)}
    return model, fns


def test_local_function_and_call_sites() -> None:
    model, fns = _calls_and_def("""
        def f(a): pass
        class C:
            def g(self): pass
            def h(self):
                self.g()
                g()  # not the method: no module-level g
        f(1)
        f(2)
        other.f(3)
        """)
    sites = model.call_sites(fns["f"])
    assert [model.module.code_for_node(c) for c in sites] == ["f(1)", "f(2)"]
    assert [model.module.code_for_node(c) for c in model.call_sites(fns["g"])] == ["self.g()"]


def test_bind_arguments() -> None:
    model, fns = _calls_and_def("""
        class C:
            def m(self, a, b=1, *, c=2): pass
        obj.m(10, c=30)
        """)
    call = _all(model.module, cst.Call)[0]
    bound = {k: (model.module.code_for_node(v) if v is not None else None)
             for k, v in bind_arguments(call, fns["m"]).items()}
    assert bound == {"self": "obj", "a": "10", "b": "1", "c": "30"}
    starred = cst.parse_expression("obj.m(*args)")
    assert bind_arguments(starred, fns["m"])["a"] is None


def test_a_class_built_by_its_name_passes_kinds_into_its_init_and_its_attributes() -> None:
    # `Runner(net, feed, crit, opt)` runs `__init__` with self bound to the new instance; the
    # attributes it keeps take the kinds. A call of the class through an attribute (a module's
    # class) is not a site of this file's `__init__`.
    src = """
        import torch
        from torch import nn
        from torch.utils.data import DataLoader

        class Runner:
            def __init__(self, a, b, c, d=None):
                self.first = a
                self.last = d
                a
                b
                c
                d

            def go(self):
                self.first
                self.last

        def main(data):
            net = nn.Sequential(nn.Linear(4, 2))
            Runner(net, DataLoader(data), nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
        """
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    init = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "__init__")
    [site] = model.call_sites(init)
    bound = bind_arguments(site, init)
    assert bound["self"] is None and model.module.code_for_node(bound["a"]) == "net"
    kinds = {text: _kind_of_last(src, text) for text in ("a", "b", "c", "d", "self.first", "self.last")}
    assert kinds == {"a": MODULE, "b": LOADER, "c": CRITERION, "d": OPTIMIZER, "self.first": MODULE,
                     "self.last": OPTIMIZER}
