"""The examples of TRN404 (MissingSuperInit): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # not modules, though each defines forward(): a helper of `object`, a trainer of an installed
        # package, and data about a model set before the base's __init__
        import torch
        from rl_toolkit import PPOTrainer
        from vision_zoo import ZooModel

        class Concat(object):
            def __init__(self, storage):
                self.storage = storage

            def forward(self, *inputs):
                return torch.cat(inputs)

        class MyTrainer(PPOTrainer):
            def __init__(self, model, ref_model: torch.nn.Module, args):
                self.ref_model = ref_model
                super().__init__(model=model, args=args)

            def forward(self, model, batch):
                return model(**batch)

        class Wrapped(ZooModel):
            def __init__(self, model_config, optimizer_config):
                self.model_config = model_config
                self.optimizer_config = optimizer_config
                super().__init__()
                self.head = torch.nn.Linear(2, 2)

            def forward(self, x):
                return self.head(x)
        """
    ),
    Valid(
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.fc = nn.Linear(d, d)

        class Old(nn.Module):
            def __init__(self, d):
                super(Old, self).__init__()
                self.fc = nn.Linear(d, d)
        """
    ),
    Valid(
        """
        # explicit base calls, a local computation first, and no attributes at all
        import torch
        from torch import nn
        class Mixin:
            def __init__(self):
                self.tag = "mixin"
        class Net(nn.Module, Mixin):
            def __init__(self, d):
                hidden = d * 4
                nn.Module.__init__(self)
                Mixin.__init__(self)
                self.fc = nn.Linear(d, hidden)
        class Identity(nn.Module):
            def __init__(self):
                pass
        """
    ),
    Valid(
        """
        # not modules: a Dataset and a plain class
        import torch
        from torch.utils.data import Dataset
        class Data(Dataset):
            def __init__(self, n):
                self.n = n
        class Config:
            def __init__(self):
                self.lr = 0.1
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, d):
                self.fc = nn.Linear(d, d)  # BUG
                super().__init__()
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        class Base(nn.Module):
            pass
        class Net(Base):
            def __init__(self, d):
                self.d = d  # BUG
                self.fc = nn.Linear(d, d)
                self.scale = nn.Parameter(torch.ones(d))
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Norm(nn.Module):
            def __init__(self, d, eps=1e-5):
                self.eps = eps  # a plain value first is fine
                self.proj = nn.Linear(d, d)  # BUG
                super().__init__()
                self.weight = nn.Parameter(torch.ones(d))

        class Stats(torch.nn.Module):
            def __init__(self, d):
                if d > 0:
                    self.register_buffer("mean", torch.zeros(d))  # BUG
                super().__init__()
        """
    ),
]
