"""The examples of TRN104 (InPlaceGradientModificationInHook): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        w = torch.randn(3, requires_grad=True)
        w.register_hook(lambda g: g.clamp(-1, 1))
        """
    ),
    Valid(
        """
        import torch
        def scale(grad):
            grad = grad * 0.5
            grad += 1  # rebinding the local name first makes this a new tensor
            return grad
        w = torch.randn(3, requires_grad=True)
        w.register_hook(scale)
        """
    ),
    Valid(
        """
        import torch
        def hook(module, grad_input, grad_output):
            return tuple(g * 2 if g is not None else None for g in grad_input)
        layer.register_full_backward_hook(hook)
        """
    ),
    Valid(
        """
        # post-accumulate hooks are meant to act on p.grad in place
        import torch
        def clip(p):
            p.grad.clamp_(-1, 1)
        param.register_post_accumulate_grad_hook(clip)
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        w = torch.randn(3, requires_grad=True)
        w.register_hook(lambda g: g.mul_(0.5))  # BUG
        """
    ),
    Invalid(
        """
        import torch
        def zero_nans(grad):
            grad[torch.isnan(grad)] = 0.0  # BUG
            return grad
        h = torch.randn(3, requires_grad=True)
        h.register_hook(zero_nans)
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        class Clip(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.fc.register_full_backward_hook(self._hook)

            def _hook(self, module, grad_input, grad_output):
                grad_input[0].clamp_(-1.0, 1.0)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        def pre_hook(module, grad_output):
            grad_output[0] *= 2  # BUG
        model.register_full_backward_pre_hook(pre_hook)
        """
    ),
]
