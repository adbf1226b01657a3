"""The examples of TRN405 (TrainMethodOverridden): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # takes train() and train(False) as PyTorch passes them, and refuses an old calling convention
        from torch import nn

        class Agent(nn.Module):
            def train(self, *args):
                if not args or (len(args) == 1 and isinstance(args[0], bool)):
                    return super().train(*args)
                raise TypeError("train(batch) is gone: use fit(batch)")
        """
    ),
    Valid(
        """
        import torch.nn as nn
        class FrozenBN(nn.Module):
            def train(self, mode=True):
                super().train(mode)
                self.bn.eval()
                return self

        class Typed(nn.Module):
            def train(self, mode: bool = True) -> "Typed":
                return super().train(mode)
        """
    ),
    Valid(
        """
        # a trainer object is not a module; fit() on a module is fine
        import torch.nn as nn
        class Trainer:
            def train(self, loader, epochs):
                pass
        class Net(nn.Module):
            def fit(self, loader):
                self.train()
        """
    ),
    Valid(
        """
        # extra optional parameters do not break train()/eval()
        from torch import nn
        class Net(nn.Module):
            def train(self, mode=True, *, freeze_bn=False):
                super().train(mode)
                return self
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch.nn as nn
        class Layer(nn.Linear):
            def train(self, x_pos, x_neg):  # BUG
                for _ in range(10):
                    loss = self(x_pos).mean() - self(x_neg).mean()
                    loss.backward()
        """
    ),
    Invalid(
        """
        import torch
        class Net(torch.nn.Module):
            def train(self):  # BUG
                super().train()
                return self
        """
    ),
    Invalid(
        """
        from torch import nn
        class Base(nn.Module):
            pass
        class Net(Base):
            def train(self, mode=False):  # BUG
                return super().train(mode)
        class Other(Base):
            def train(self, training=True):  # BUG
                return super().train(training)
        """
    ),
]
