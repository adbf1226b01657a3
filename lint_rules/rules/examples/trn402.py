"""The examples of TRN402 (TensorAttributeNotRegistered): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # a buffer registered by a base class (here or in torch) is updated, not shadowed
        import torch
        import torch.nn as nn
        class NormBase(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("num_batches_tracked", torch.tensor(0))
        class LazyNorm(NormBase):
            def __init__(self):
                super().__init__()
                self.num_batches_tracked = torch.tensor(0, dtype=torch.long)
        class MyBatchNorm(nn.BatchNorm1d):
            def __init__(self, n):
                super().__init__(n)
                self.running_mean = torch.zeros(n)
        """
    ),
    Valid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.register_buffer("mask", torch.tril(torch.ones(n, n)))
                self.temperature = nn.Parameter(torch.ones(1))
                self.scale = d ** -0.5
                self.device = torch.device("cpu")
                self.dtype = torch.get_default_dtype()
        """
    ),
    Valid(
        """
        # registered first, then assigned; wrapped later; passed in; a cache filled in forward
        import torch
        from torch import nn
        class Norm(nn.Module):
            def __init__(self, d, weight):
                super().__init__()
                self.register_buffer("running_mean", None)
                self.running_mean = torch.zeros(d)
                self.gain = torch.ones(d)
                self.gain = nn.Parameter(self.gain)
                self.weight = weight
                self.cache = None

            def forward(self, x):
                self.cache = torch.zeros_like(x)
                return x * self.gain
        """
    ),
    Valid(
        """
        # a placeholder for a cache that forward() recomputes from scratch
        import torch
        import torch.nn as nn
        class RelPos(nn.Module):
            def __init__(self):
                super().__init__()
                self.rel_indices: torch.Tensor = torch.zeros(1, 1, 1, 3)

            def forward(self, x):
                if self.rel_indices.shape[1] != x.shape[1]:
                    self.rel_indices = self.get_rel_indices(x.shape[1])
                return x
        """
    ),
    Valid(
        """
        # state handed in by a setter whose parameter carries the attribute's name
        import torch
        from torch import nn
        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.lengths = torch.zeros(1, dtype=torch.long)

            def set_lengths(self, lengths):
                self.lengths = lengths
        """
    ),
    Valid(
        """
        # not a module: a plain container class and a Dataset
        import torch
        from torch.utils.data import Dataset
        class State:
            def __init__(self, n):
                self.buf = torch.zeros(n)
        class Data(Dataset):
            def __init__(self, n):
                self.x = torch.randn(n, 3)
        """
    ),
    Valid(
        """
        # a helper that __init__ calls and forward calls again: run-time state, refreshed
        import torch
        from torch import nn
        class Cell(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.gate = nn.Linear(width, width)
                self.reset_state(width)

            def reset_state(self, width):
                self.carry = torch.zeros(1, width)

            def forward(self, x):
                if x.shape[0] != self.carry.shape[0]:
                    self.reset_state(x.shape[1])
                return torch.sigmoid(self.gate(x)) * self.carry
        """
    ),
    Valid(
        """
        # a dummy scale that a gradient penalty differentiates against: never meant to be trained
        import torch
        from torch import autograd, nn
        class InvariancePenalty(nn.Module):
            def __init__(self):
                super().__init__()
                self.dummy = torch.tensor(1.0).requires_grad_()

            def forward(self, logits, labels):
                loss = nn.functional.cross_entropy(logits * self.dummy, labels)
                (grad,) = autograd.grad(loss, [self.dummy], create_graph=True)
                return grad.pow(2).sum()
        """
    ),
]

INVALID = [
    Invalid(
        """
        # state created in a helper that only __init__ calls
        import torch
        from torch import nn
        class Cell(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.gate = nn.Linear(width, width)
                self._init_state(width)

            def _init_state(self, width):
                self.carry = torch.zeros(1, width)  # BUG

            def forward(self, x):
                return torch.sigmoid(self.gate(x)) * self.carry
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.mask = torch.tril(torch.ones(n, n)).view(1, 1, n, n)  # BUG
                self.scale = torch.tensor(n).rsqrt()  # BUG
                self.temperature = torch.ones(1, requires_grad=True)  # BUG
        """
    ),
    Invalid(
        """
        import math
        import torch
        from torch import nn
        class PositionalEncoding(nn.Module):
            def __init__(self, d, max_len=512):
                super().__init__()
                pe = torch.zeros(max_len, d)
                pos = torch.arange(max_len).unsqueeze(1)
                div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
                pe[:, 0::2] = torch.sin(pos * div)
                self.pe = pe  # BUG

            def forward(self, x):
                return x + self.pe[: x.size(0)]
        """
    ),
    Invalid(
        """
        import torch
        from torch.nn import Module
        class Base(Module):
            pass
        class Normalize(Base):
            def __init__(self):
                super().__init__()
                self.mean: torch.Tensor = torch.tensor([0.485, 0.456, 0.406])  # BUG
                self.std = torch.FloatTensor([0.229, 0.224, 0.225])  # BUG
        """
    ),
    Invalid(
        """
        # a running statistic updated in forward: lost from every checkpoint
        import torch
        import torch.nn as nn
        class Counter(nn.Module):
            def __init__(self):
                super().__init__()
                self.seen = torch.zeros(())  # BUG

            def forward(self, x):
                self.seen = self.seen + x.shape[0]
                return x

        # a recurrent state updated from itself through local variables
        class Cell(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.gate = nn.Linear(n, n)
                self.carry = torch.zeros(1, n)  # BUG

            def forward(self, x):
                prev = self.carry
                c = torch.sigmoid(self.gate(x)) * prev
                self.carry = c.detach()
                return c
        """
    ),
    Invalid(
        """
        # tensors put on a GPU that __init__ picks itself: the module can no longer be moved
        import torch
        from torch import nn
        class Lookup(nn.Module):
            def __init__(self, n, alpha):
                super().__init__()
                where = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.table = alpha * torch.eye(n, device=where)  # BUG
                self.offsets = torch.arange(n).long().cuda()  # BUG

            def forward(self, idx):
                return self.table[idx] + self.offsets[idx]
        """
    ),
    Invalid(
        """
        # statistics a bandit learns while it runs, updated in place: lost from every checkpoint
        import torch
        from torch import nn
        class Bandit(nn.Module):
            def __init__(self, arms):
                super().__init__()
                self.pulls = torch.zeros(arms)  # BUG
                self.reward_sums = torch.zeros(arms)  # BUG

            def observe(self, arm, reward):
                self.pulls[arm] += 1
                self.reward_sums.index_add_(0, arm, reward)

            def forward(self):
                return self.reward_sums / self.pulls.clamp(min=1)
        """
    ),
    Invalid(
        """
        # declared None, then created and updated while training: a running centre, a memory queue
        import torch
        import torch.nn as nn
        class CenteredLoss(nn.Module):
            def __init__(self, momentum):
                super().__init__()
                self.momentum = momentum
                self.center = None

            @torch.no_grad()
            def update(self, teacher_out):
                batch_center = torch.mean(teacher_out, dim=0, keepdim=True)
                if self.center is None:
                    self.center = batch_center.clone()  # BUG
                else:
                    self.center = self.center * self.momentum + batch_center * (1 - self.momentum)

        class Queue(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.size = size
                self.keys = None

            def _allocate(self, dim):
                self.keys = torch.randn(self.size, dim)  # BUG

            def forward(self, k, ptr):
                if self.keys is None:
                    self._allocate(k.shape[1])
                self.keys[ptr:ptr + k.shape[0]] = k.detach()
                return self.keys.clone()
        """
    ),
    Invalid(
        """
        # a LightningModule: the Trainer moves the module, not a plain tensor attribute
        import torch
        import lightning as L
        class Scorer(L.LightningModule):
            def __init__(self, n_metrics, n_actions):
                super().__init__()
                self.net = torch.nn.Linear(8, n_metrics * n_actions)
                self.offsets = torch.arange(0, n_metrics * n_actions, n_actions)  # BUG
                self.support = torch.linspace(-10, 10, 51, device=self.device)  # BUG

            def training_step(self, batch, batch_idx):
                q = self.net(batch["x"]).gather(1, self.offsets + batch["action"])
                return (q * self.support[:1]).mean()
        """
    ),
    Invalid(
        """
        # the device handed in is an accelerator that every construction picks itself
        import torch
        from torch import nn
        class Sharpen(nn.Module):
            def __init__(self, amount, place):
                super().__init__()
                self.kernel = torch.tensor([[0., -1., 0.], [-1., 5., -1.], [0., -1., 0.]]).to(place) * amount  # BUG

            def forward(self, x):
                return nn.functional.conv2d(x, self.kernel.expand(x.size(1), 1, 3, 3), groups=x.size(1))

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                dev = "cuda" if torch.cuda.is_available() else "cpu"
                self.sharpen = Sharpen(0.5, dev)
        """
    ),
    Invalid(
        """
        # noise redrawn by a method that __init__ calls and the training loop calls again
        import torch
        from torch import nn
        class NoisyHead(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.width = width
                self.sigma = nn.Parameter(torch.full((width,), 0.5))
                self.resample()

            def resample(self):
                self.noise = torch.randn(self.width)  # BUG

            def forward(self, x):
                return x + self.sigma * self.noise

        def act(head, x):
            head.resample()
            return head(x)
        """
    ),
]
