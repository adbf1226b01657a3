"""Whether a leaf made to require grad still does: what the file switches off, and copies."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.requires_grad import still_requires_grad


def _answers(src: str) -> list[bool | None]:
    """The answer for the receiver of every ``<x>.fill_(...)`` call, in order."""
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    calls = [c for c in model.nodes(cst.Call)
             if isinstance(c.func, cst.Attribute) and c.func.attr.value == "fill_"]
    return [still_requires_grad(model, c.func.value, c) for c in calls]


def test_a_parameter_made_with_a_flag() -> None:
    assert _answers("""
        import torch
        from torch import nn
        class Head(nn.Module):
            def __init__(self, learn):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1))
                self.scale.fill_(2.0)
                self.frozen = nn.Parameter(torch.ones(1), requires_grad=False)
                self.frozen.fill_(2.0)
                self.maybe = nn.Parameter(torch.ones(1), learn)
                self.maybe.fill_(2.0)
        """) == [True, False, None]


def test_requires_grad_switched_off_somewhere_in_the_file() -> None:
    assert _answers("""
        import torch
        w = torch.zeros(3, requires_grad=True)
        w.requires_grad_(False)
        w.fill_(1.0)
        v = torch.zeros(3, requires_grad=True)
        v.fill_(1.0)
        """) == [None, True]


def test_loops_over_parameters_of_frozen_or_copied_modules() -> None:
    assert _answers("""
        import copy
        import torch
        for q in backbone.parameters():
            q.requires_grad = False
        ema = copy.deepcopy(model)
        for p in backbone.parameters():
            p.fill_(0.0)                      # the frozen module's parameters
        for p in ema.parameters():
            p.fill_(0.0)                      # a copy, frozen by its maker
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.fill_(0.0)                  # a loop that tells frozen ones apart
        for p in model.parameters():
            p.fill_(0.0)                      # nothing says these are frozen
        """) == [None, None, None, True]
