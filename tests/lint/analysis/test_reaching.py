"""Order-aware bindings: a later rebinding does not reach an earlier use, except around a loop."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.kinds import LEAF, kind_at
from lint_rules.analysis.model import FileModel


def _aug_assigns(src: str) -> tuple[FileModel, list[cst.AugAssign]]:
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    return model, list(model.nodes(cst.AugAssign))


def test_later_rebinding_does_not_reach_an_earlier_use() -> None:
    model, (aug,) = _aug_assigns("""
        import torch
        def f(data):
            w = data.clone()
            w += 1
            w = torch.zeros(3, requires_grad=True)
        """)
    assert kind_at(model, aug.target, aug) is None
    assert model.kind_of(aug.target) == LEAF  # the order-blind view, for contrast


def test_rebinding_later_in_a_loop_reaches_the_next_iteration() -> None:
    model, (aug,) = _aug_assigns("""
        import torch
        w = data.clone()
        for _ in range(3):
            w += 1
            w = torch.zeros(3, requires_grad=True)
        """)
    assert kind_at(model, aug.target, aug) == LEAF


def test_bindings_of_an_enclosing_scope_always_count() -> None:
    model, (aug,) = _aug_assigns("""
        import torch
        def f():
            global w
            w += 1
        w = torch.zeros(3, requires_grad=True)
        """)
    assert kind_at(model, aug.target, aug) == LEAF
