"""The examples of TRN301 (DataParallel): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # a test of the DataParallel path itself
        import torch
        def test_wrapper_keeps_outputs():
            net = torch.nn.Linear(2, 2)
            wrapped = torch.nn.DataParallel(net)
            assert wrapped.module is net
        """
    ),
    Valid(
        """
        import torch.nn as nn
        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
        """
    ),
    Valid(
        """
        # isinstance checks unwrap models that others wrapped
        from torch import nn
        raw = model.module if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)) else model
        """
    ),
    Valid(
        """
        # a local class that happens to share the name
        import torch
        class DataParallel:
            def __init__(self, m):
                self.m = m
        wrapped = DataParallel(model)
        """
    ),
    Valid(
        """
        import torch
        def wrap(torch, model):
            return torch.nn.DataParallel(model)  # `torch` here is a parameter, not the module
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        model = torch.nn.DataParallel(model)  # BUG
        """
    ),
    Invalid(
        """
        from torch.nn.parallel.data_parallel import DataParallel as DP
        model = DP(model, device_ids=[0, 1])  # BUG
        """
    ),
    Invalid(
        """
        import torch.nn.parallel as par
        class Wrapper(par.DataParallel):  # BUG
            pass
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        Parallel = nn.DataParallel
        net = Parallel(net)  # BUG
        """
    ),
]
