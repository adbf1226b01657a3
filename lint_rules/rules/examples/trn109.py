"""The examples of TRN109 (InPlaceOpOnAliasedForwardTensor): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # the standard residual block: in-place ops on fresh tensors only
        import torch
        from torch import nn
        class BasicBlock(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv1 = nn.Conv2d(c, c, 3, padding=1)
                self.conv2 = nn.Conv2d(c, c, 3, padding=1)
                self.relu = nn.ReLU(inplace=True)

            def forward(self, x):
                identity = x
                out = self.conv1(x)
                out = self.relu(out)
                out = self.conv2(out)
                out += identity
                out = self.relu(out)
                return out
        """
    ),
    Valid(
        """
        # out-of-place updates of the input, and an alias rebound before the in-place op
        import torch
        from torch import nn
        import torch.nn.functional as F
        class Block(nn.Module):
            def forward(self, x: torch.Tensor, step: int = 0):
                x = x + self.attn(self.ln1(x))
                x = x + self.mlp(self.ln2(x))
                skip = x
                skip = self.proj(skip)
                x = F.relu(x)
                step += 1
                h = self.fc(x)
                h.relu_()
                return h + skip
        """
    ),
    Valid(
        """
        # clone() breaks the alias; an explicit inplace option is the caller's choice
        import torch
        from torch import nn
        class LayerScale(nn.Module):
            def __init__(self, dim, inplace=False):
                super().__init__()
                self.inplace = inplace
                self.gamma = nn.Parameter(torch.ones(dim))

            def forward(self, x):
                return x.mul_(self.gamma) if self.inplace else x * self.gamma

        class Head(nn.Module):
            def forward(self, x):
                y = x.clone()
                y[:, 0] = 0
                y.clamp_(min=0)
                return y

        class GatedUnit(nn.Module):
            def forward(self, x):
                a, gate = self.proj(x).chunk(2, dim=-1)
                gate.sigmoid_()  # the other half does not share these elements
                return a * gate
        """
    ),
    Valid(
        """
        # not a forward method of a module
        import torch
        def preprocess(x):
            x += 1
            x.clamp_(0, 1)
            return x
        class Collator:
            def forward(self, batch):
                batch.relu_()
                return batch
        """
    ),
    Valid(
        """
        # a helper that copies before writing, and one that fills a cache dict
        import torch
        from torch import nn
        class Normalize(nn.Module):
            def _normalize(self, x):
                x = x.clone()
                x -= self.mean
                return x

            def _remember(self, cache, key):
                cache["key"] = key

            def forward(self, x, cache=None):
                skip = x
                y = self._normalize(x)
                self._remember(cache, y)
                return self.net(y) + skip
        """
    ),
]

INVALID = [
    Invalid(
        """
        # a helper of the module writes the caller's tensor in place
        import torch
        from torch import nn
        class Normalize(nn.Module):
            def _normalize_(self, x):
                x -= self.mean
                x /= self.std

            def forward(self, x):
                self._normalize_(x)  # BUG
                return self.net(x)
        """
    ),
    Invalid(
        """
        # an in-place activation by a module-level helper, on a tensor the skip reads
        import torch
        import torch.nn.functional as F
        from torch import nn
        def activate(t):
            F.relu(t, inplace=True)
        class Block(nn.Module):
            def forward(self, x):
                h = self.conv(x)
                skip = h
                activate(h)  # BUG
                return self.proj(h) + skip
        """
    ),
    Invalid(
        """
        # a LightningModule is an nn.Module: its forward is checked too
        import pytorch_lightning as pl
        from torch import nn
        class Classifier(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.act = nn.ReLU(inplace=True)
            def forward(self, x):
                skip = x
                x = self.act(x)  # BUG
                return x + skip
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        class PreActBlock(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.act = nn.ReLU(inplace=True)
                self.conv = nn.Conv2d(c, c, 3, padding=1)

            def forward(self, x):
                shortcut = x
                x = self.act(x)  # BUG
                return self.conv(x) + shortcut
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 8, 3)
                self.blocks = nn.ModuleList(nn.Conv2d(8, 8, 3, padding=1) for _ in range(3))

            def forward(self, img):
                x = self.stem(img)
                features = []
                for blk in self.blocks:
                    features.append(x)
                    x = blk(x)
                    F.relu_(x)
                skip = x
                x = x.flatten(1)
                x.sigmoid_()  # BUG
                return x, skip, features
        """
    ),
    Invalid(
        """
        # the caller's tensor is modified
        import torch
        from torch import nn
        class AddPosition(nn.Module):
            def __init__(self, n, dim):
                super().__init__()
                self.pos = nn.Parameter(torch.zeros(1, n, dim))
                self.drop = nn.Dropout(0.1, True)

            def forward(self, tokens: torch.Tensor, mask=None):
                tokens += self.pos  # BUG
                h = tokens.transpose(1, 2)
                h[:, :, 0] = 0  # BUG
                return self.drop(tokens)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        class Base(nn.Module):
            pass
        class Residual(Base):
            def __init__(self, fn):
                super().__init__()
                self.fn = fn

            def forward(self, x):
                y = self.fn(x)
                out = y
                y += x  # BUG
                return out * 0.5 + y
        """
    ),
]
