"""The examples of TRN103 (InPlaceUpdateOfLeafRequiringGrad): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # a Variable without requires_grad is a plain tensor
        import torch
        from torch.autograd import Variable
        w = Variable(torch.randn(3))
        w += 0.1
        """
    ),
    Valid(
        """
        # the name becomes a leaf only after the in-place update
        import torch
        def make(data):
            w = data.clone()
            w += 1
            w = torch.tensor(w.tolist(), requires_grad=True)
            return w
        """
    ),
    Valid(
        """
        import torch
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        """
    ),
    Valid(
        """
        # p.grad.zero_() touches the gradient, not the leaf
        import torch
        for p in model.parameters():
            if p.grad is not None:
                p.grad.zero_()
                p.grad.mul_(0.5)
        """
    ),
    Valid(
        """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.empty(3, 3))
                self.reset_parameters()

            @torch.no_grad()
            def reset_parameters(self):
                self.w.uniform_(-0.1, 0.1)
        """
    ),
    Valid(
        """
        # tensors that do not require grad, and a non-leaf result
        import torch
        buf = torch.zeros(10)
        buf += 1
        w = torch.randn(3, requires_grad=True)
        y = w * 2
        y += 1
        """
    ),
    Valid(
        """
        import torch
        w = torch.randn(3, requires_grad=True)
        with torch.inference_mode():
            w.clamp_(-1, 1)
        """
    ),
    Valid(
        """
        # a Parameter made with requires_grad=False is a buffer in all but name
        import torch
        from torch import nn
        class Embed(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.table = nn.Parameter(torch.empty(n, d), requires_grad=False)
                self.table.normal_(0, 1)
        """
    ),
]

INVALID = [
    Invalid(
        """
        # the pre-0.4 spelling of a leaf that requires grad
        import torch
        from torch.autograd import Variable
        w = Variable(torch.randn(3), requires_grad=True)
        w += 0.1  # BUG
        """
    ),
    Invalid(
        """
        # in a loop, the rebinding at the end reaches the += of the next iteration
        import torch
        w = data.clone()
        for step in range(10):
            w += 0.1  # BUG
            w = torch.zeros(3, requires_grad=True)
        """
    ),
    Invalid(
        """
        import torch
        for p in model.parameters():
            p -= lr * p.grad  # BUG
        """
    ),
    Invalid(
        """
        import torch
        w = torch.randn(3, 3, requires_grad=True)
        w.add_(1.0)  # BUG
        w[0] = 0.0  # BUG
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(4, 4))
                self.weight.normal_(0, 0.02)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        for name, param in model.named_parameters():
            if "bias" in name:
                param.zero_()  # BUG
        """
    ),
]
