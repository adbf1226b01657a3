"""Plain containers and what they are built from (analysis/containers.py), asked of the facts directly."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.containers import ContainerFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
import torch.nn as nn
from typing import List, Optional

class Block(nn.Module):
    pass

class Plain:
    pass

class Net(nn.Module):
    heads: Optional[List[nn.Module]]
    def __init__(self, n):
        super().__init__()
        self.branches: Optional[List[nn.Module]] = None
        self.sizes: List[int] = []
        layers = [nn.Linear(4, 4) for _ in range(n)]
        probe(layers)
        probe([nn.Linear(2, 2), Block()] * 2)
        probe({"a": nn.Parameter(torch.zeros(3)), "b": 1})
        probe(list((torch.zeros(3, requires_grad=True), torch.zeros(3))))
        probe((Plain(), nn.MSELoss(), torch.zeros(2)))
        probe(make_layers())
"""


def _facts() -> tuple[FileModel, ContainerFacts, list[cst.CSTNode]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    probes = [c.args[0].value for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    return model, model.fact(ContainerFacts), probes


def test_is_container_and_a_local_name_bound_to_one() -> None:
    _, facts, probes = _facts()
    local = facts.local_container(probes[0])
    assert isinstance(local, cst.ListComp) and facts.is_container(local)
    assert [facts.is_container(p) for p in probes[1:]] == [True, True, True, True, False]


def test_elements_and_their_kinds() -> None:
    model, facts, probes = _facts()
    code = model.module.code_for_node
    assert [code(e) for e in facts.elements(probes[1])] == ["nn.Linear(2, 2)", "Block()"]
    assert [facts.element_kind(e) for e in facts.elements(probes[1])] == ["module", "module"]
    assert [facts.element_kind(e) for e in facts.elements(probes[2])] == ["parameter", None]
    assert facts.elements(probes[5]) == []


@pytest.mark.parametrize(("index", "trainable"), [(0, [True]), (1, [True, True]), (2, [True, False]),
                                                  (3, [True, False]), (4, [False, False, False])])
def test_trainable_elements(index: int, trainable: list[bool]) -> None:
    _, facts, probes = _facts()
    container = facts.local_container(probes[0]) if index == 0 else probes[index]
    # a loss module holds no parameters; a tensor trains only with requires_grad=True
    assert [facts.trainable(e) for e in facts.elements(container)] == trainable


def test_declared_modules_reads_the_annotation() -> None:
    model, facts, _ = _facts()
    net = next(c for c in model.nodes(cst.ClassDef) if c.name.value == "Net")
    assert facts.declared_modules(net, "branches") is True
    assert facts.declared_modules(net, "sizes") is False
    assert facts.declared_modules(net, "missing") is False


def test_stateless_torch_layers_are_not_trainable_elements() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch.nn as nn
        from torch import nn as tnn
        probe([nn.AvgPool2d(2), tnn.Identity(), nn.modules.activation.ReLU(), nn.Upsample(scale_factor=2)])
        probe([nn.Dropout(0.1), nn.PReLU(), tnn.BatchNorm1d(4), nn.LayerNorm(4)])
    """)))
    facts = model.fact(ContainerFacts)
    pooled, stateful = [c.args[0].value for c in model.nodes(cst.Call)
                        if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    # nothing to train, move or switch to eval in the first; parameters, buffers or a mode in the second
    assert [facts.trainable(e) for e in facts.elements(pooled)] == [False, False, False, False]
    assert [facts.trainable(e) for e in facts.elements(stateful)] == [True, True, True, True]


def test_returned_container_follows_a_helper_of_the_file_to_its_local_list() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch.nn as nn
        def build(cfg):
            layers = []
            for width in cfg:
                layers.append(nn.Linear(width, width))
            return cfg[0], layers
        def single(n):
            blocks = {}
            if n:
                return blocks
            return blocks
        def two_lists(n):
            a = []
            b = []
            if n:
                return a
            return b
        def registered(n):
            mods = nn.ModuleList()
            return mods
        probe(build([2]), single(1), two_lists(1), registered(1), build([3]))
    """)))
    facts = model.fact(ContainerFacts)
    call = next(c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "probe")
    built, single, two, registered, again = [a.value for a in call.args]
    code = model.module.code_for_node
    assert code(facts.returned_container(built, 1)) == "[]"
    assert facts.returned_container(built, 0) is None  # cfg[0]: not a local container
    assert facts.returned_container(built) is None  # the tuple itself is not a local name
    assert code(facts.returned_container(single)) == "{}"
    assert facts.returned_container(two) is None  # two different lists: which one is unknown
    assert facts.returned_container(registered) is None  # an nn.ModuleList registers
    assert facts.returned_container(again, 1) is facts.returned_container(built, 1)


def test_handed_elsewhere_needs_a_call_that_puts_the_element_into_another_object() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch.nn as nn
        def build(net, paths, n):
            index = {}
            for p in paths:
                wrapped = Wrapper(get(net, p))
                place(net, p, wrapped)
                index[p] = wrapped
            kept = []
            for i in range(n):
                layer = nn.Linear(n, n)
                init_weights(layer)
                kept.append(layer)
            for i in range(n):
                block = nn.Linear(n, n)
                setattr(net, f"block{i}", block)
            return index, kept
        """)))
    held = model.fact(ContainerFacts)
    names = {}  # the last use of each name, as the rule meets the element it stores
    stack: list[cst.CSTNode] = [model.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in ("wrapped", "layer", "block"):
            names.setdefault(node.value, node)
        stack.extend(node.children)
    # `layer` only goes to a helper of its own and to the list: nothing else holds it
    assert {name for name, node in names.items() if held.handed_elsewhere(node)} == {"wrapped", "block"}


def test_stateless_class_holds_only_layers_without_state_and_plain_values() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch
        import torch.nn as nn
        class Smooth(nn.Module):
            def __init__(self, k, stride=1):
                super().__init__()
                self.k = k
                self.pad = (k - 1) // 2
                self.pool = nn.AvgPool1d(k, stride=stride)
        class Pair(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.first = Smooth(k)
                self.act = nn.GELU()
        class Learned(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.pool = nn.AvgPool1d(k)
                self.mix = nn.Linear(k, 1)
        class Weighted(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.w = nn.Parameter(torch.ones(k))
        class Buffered(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.register_buffer("window", torch.ones(k))
        class Wrapper(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
            def forward(self, x):
                return self.inner(x)
        class Dropping(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.1)
        class Built(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.body = make_body(cfg)
        class Derived(Smooth):
            pass
        """)))
    held = model.fact(ContainerFacts)
    stateless = {c.name.value for c in model.nodes(cst.ClassDef) if held.stateless_class(c)}
    # a class deriving from another than nn.Module may inherit state: not judged
    assert stateless == {"Smooth", "Pair"}
