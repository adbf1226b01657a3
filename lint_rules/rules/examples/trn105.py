"""The examples of TRN105 (RequiresGradLostByDeviceMove): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        w = torch.randn(10, 1, device=device, requires_grad=True)
        b = torch.zeros(1, device="cuda", dtype=torch.float64, requires_grad=True)
        optimizer = torch.optim.SGD([w, b], lr=0.1)
        """
    ),
    Valid(
        """
        # move first, then ask for gradients: the result is a leaf
        import torch
        w = torch.randn(10, 1).to(device).requires_grad_()
        x = torch.randn(3, 4).cuda()
        x.requires_grad = True
        """
    ),
    Valid(
        """
        # a copy used in the graph is fine; the leaf keeps its name and gets .grad
        import torch
        w = torch.randn(3, requires_grad=True)
        w_gpu = w.to(device)
        loss = (w_gpu * x).sum()
        """
    ),
    Valid(
        """
        # nn.Parameter(...) wraps the moved copy into a new leaf; module.to() keeps parameters
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1, requires_grad=True).to(device))
        model = Net().to(device)
        """
    ),
    Valid(
        """
        # no-ops on a default float32 CPU tensor, and a detached copy
        import torch
        w = torch.randn(3, requires_grad=True).float()
        c = torch.zeros(3, requires_grad=True).cpu()
        snapshot = torch.randn(3, requires_grad=True).cuda().detach()
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        w = torch.randn(10, 1, requires_grad=True).to(device)  # BUG
        b = torch.zeros(1, requires_grad=True).cuda()  # BUG
        optimizer = torch.optim.SGD([w, b], lr=0.1)
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.temperature = nn.Parameter(torch.ones(1)).cuda()  # BUG
                self.bias = nn.Parameter(torch.zeros(4)).double()  # BUG
        """
    ),
    Invalid(
        """
        import torch as T
        x = T.tensor([1.0, 2.0], requires_grad=True)
        x = x.to("cuda")  # BUG
        y = T.empty(5).requires_grad_().half()  # BUG
        z = T.rand(2, dtype=T.float64, requires_grad=True).float()  # BUG
        """
    ),
]
