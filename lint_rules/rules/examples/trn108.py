"""The examples of TRN108 (TensorDataAttribute): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        for x, y in loader:
            loss_fn(model(x), y).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-lr)
        """
    ),
    Valid(
        """
        # .data of datasets, batches and other non-tensors
        import torch
        from torchvision import datasets
        ds = datasets.MNIST("data", download=True)
        images = ds.data.float() / 255
        for batch in loader:
            x = batch.data
        config.data = "imagenet"
        """
    ),
    Valid(
        """
        # an optimizer's own step (its base class imported from elsewhere), and a no_grad init function
        import torch
        from .base import BaseOptimizer
        class MySGD(BaseOptimizer):
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        p.data.add_(p.grad.data, alpha=-group["lr"])

        @torch.no_grad()
        def init_weights(model):
            for p in model.parameters():
                p.data.normal_(0, 0.02)
        """
    ),
    Valid(
        """
        # buffers and plain tensors do not require grad
        import torch
        from torch import nn
        stats = torch.zeros(10)
        stats.data += 1
        bn = nn.BatchNorm1d(10)
        mean = bn.running_mean.data
        """
    ),
    Valid(
        """
        # build-time writes: in __init__, in a function given to apply(), in a module converter
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 2)
                self.fc.weight.data.normal_(0, 0.01)
                self.fc.bias.data = torch.zeros(2)
                self.apply(self._init)

            def _init(self, module):
                if isinstance(module, nn.Linear):
                    nn.init.xavier_uniform_(module.weight.data)
                    module.bias.data.zero_()

        def to_frozen(src: nn.BatchNorm2d) -> nn.BatchNorm2d:
            out = nn.BatchNorm2d(src.num_features)
            out.weight.data = src.weight.data.clone()
            return out
        """
    ),
    Valid(
        """
        # a gradient-scaling helper outside any training loop: it reads no other gradient
        import torch
        def scale_grads(model, c):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.data.mul_(c)
        """
    ),
    Valid(
        """
        # reads while training: logging and checks change nothing
        import torch
        w = torch.randn(3, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for x, y in loader:
            loss = ((x @ w - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(loss.data, w.data.norm())
            assert not torch.isnan(w.grad.data).any()
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        for p in model.parameters():
            p.data.add_(p.grad.data, alpha=-lr)  # BUG
        """
    ),
    Invalid(
        """
        # weight clipping in a critic's training loop
        import torch
        opt_d = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
        for real in loader:
            loss = -critic(real).mean()
            opt_d.zero_grad()
            loss.backward()
            opt_d.step()
            for p in critic.parameters():
                p.data.clamp_(-0.01, 0.01)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Pruned(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def train_step(self, x, opt):
                self(x).sum().backward()
                opt.step()
                self.fc.weight.data.mul_(self.mask)  # BUG
                self.fc.weight.data = self.fc.weight.data * 2  # BUG
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        w = torch.randn(3, requires_grad=True)
        for x, y in loader:
            loss = F.mse_loss(x @ w, y)
            loss.backward()
            print(loss.data)
            w.data -= 0.1 * w.grad.data  # BUG
        """
    ),
]
