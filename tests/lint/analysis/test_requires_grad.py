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


def _frozen(src: str) -> dict[str, bool]:
    """Whether each receiver of a ``<x>.forward_probe()`` call is a module the file freezes."""
    from lint_rules.analysis.requires_grad import frozen

    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    calls = [c for c in model.nodes(cst.Call)
             if isinstance(c.func, cst.Attribute) and c.func.attr.value == "forward_probe"]
    return {model.module.code_for_node(c.func.value): frozen(model, c.func.value) for c in calls}


def test_modules_frozen_by_a_loop_over_their_parameters_or_requires_grad_() -> None:
    assert _frozen("""
        import torch
        denoiser.eval()
        for key, value in denoiser.named_parameters():
            value.requires_grad = False
        for w in self.encoder.parameters():
            w.requires_grad_(False)
        critic.requires_grad_(False)
        actor.requires_grad_()
        for p in student.parameters():
            p.requires_grad = flag
        denoiser.forward_probe()
        self.encoder.forward_probe()
        critic.forward_probe()
        actor.forward_probe()
        student.forward_probe()
    """) == {"denoiser": True, "self.encoder": True, "critic": True, "actor": False, "student": False}


def test_a_frozen_module_with_a_part_unfrozen_again_still_records() -> None:
    # fine-tuning: the backbone is frozen, its head trains again
    assert _frozen("""
        for p in net.parameters():
            p.requires_grad = False
        for p in net.fc.parameters():
            p.requires_grad = True
        for p in backbone.parameters():
            p.requires_grad = False
        head.requires_grad_(True)
        net.forward_probe()
        backbone.forward_probe()
    """) == {"net": False, "backbone": True}
