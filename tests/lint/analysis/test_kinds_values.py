"""Value kinds through containers, parameter defaults, self attributes and iteration."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.kinds import CRITERION, LOADER, MODULE, OPTIMIZER, TENSOR
from lint_rules.analysis.model import FileModel


def _kind_of_last(src: str, text: str) -> str | None:
    """Kind of the last expression spelled ``text`` in ``src``."""
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    found = [n for tp in (cst.Name, cst.Attribute, cst.Subscript) for n in _all(model.module, tp)
             if model.module.code_for_node(n) == text]
    return model.kind_of(found[-1])


def _all(module: cst.Module, tp: type) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, tp):
                out.append(node)
            return True

    module.visit(V())
    return out


def test_dict_literal_and_subscript() -> None:
    src = """
        import torch
        from torch.utils.data import DataLoader
        models = {"generator": torch.nn.Linear(2, 2), "opt": torch.optim.Adam(p)}
        loaders = dict(train=DataLoader(a), dev=DataLoader(b))
        models["generator"]
        models["opt"]
        loaders["dev"]
        models["missing"]
        """
    assert _kind_of_last(src, 'models["generator"]') == MODULE
    assert _kind_of_last(src, 'models["opt"]') == OPTIMIZER
    assert _kind_of_last(src, 'loaders["dev"]') == LOADER
    assert _kind_of_last(src, 'models["missing"]') is None


def test_tuple_literal_index_and_unpacking() -> None:
    src = """
        import torch
        pair = (torch.nn.Linear(2, 2), torch.optim.SGD(p, lr=0.1))
        net, sgd = torch.nn.Linear(2, 2), torch.optim.SGD(p, lr=0.1)
        pair[1]
        net
        sgd
        """
    assert _kind_of_last(src, "pair[1]") == OPTIMIZER
    assert _kind_of_last(src, "net") == MODULE
    assert _kind_of_last(src, "sgd") == OPTIMIZER


def test_parameter_default_through_self_attribute() -> None:
    src = """
        import torch.nn as nn
        class Trainer:
            def __init__(self, loss_fn=nn.CrossEntropyLoss(), other=None):
                self.loss = loss_fn
                self.other = other
            def step(self, x, y):
                return self.loss(x, y), self.other
        """
    assert _kind_of_last(src, "self.loss") == CRITERION
    assert _kind_of_last(src, "self.other") is None


def test_attribute_created_in_a_helper_that_init_calls() -> None:
    src = """
        import torch
        class Trainer:
            def __init__(self):
                self._build()
            def _build(self):
                self.opt = torch.optim.SGD(self.params, lr=0.1)
            def step(self):
                self.opt
        """
    assert _kind_of_last(src, "self.opt") == OPTIMIZER


def test_iterating_a_tensor_and_a_list_of_modules() -> None:
    src = """
        import torch
        probabilities = torch.softmax(logits, dim=1)
        for row in probabilities:
            row
        for m in [torch.nn.Linear(2, 2), torch.nn.ReLU()]:
            m
        for x in something:
            x
        """
    assert _kind_of_last(src, "row") == TENSOR
    assert _kind_of_last(src, "m") == MODULE
    assert _kind_of_last(src, "x") is None
