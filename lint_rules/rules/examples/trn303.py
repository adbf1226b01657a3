"""The examples of TRN303 (ShuffleWithSampler): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import SAFE, UNSAFE, Invalid, Valid

VALID = [
    Valid(
        """
        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds))
        """
    ),
    Valid(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, batch_size=32, shuffle=(sampler is None), sampler=sampler)
        """
    ),
    Valid(
        """
        import torch
        loader = torch.utils.data.DataLoader(ds, shuffle=True, sampler=None)
        """
    ),
    Valid(
        """
        # not torch's DataLoader
        from mylib import DataLoader
        loader = DataLoader(ds, shuffle=True, sampler=s)
        """
    ),
]

INVALID = [
    Invalid(
        """
        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(ds, batch_size=32, shuffle=True, sampler=DistributedSampler(ds))  # BUG
        """,
        fixed="""
        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds))  # BUG
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        import torch.utils.data as data
        sampler = data.RandomSampler(ds)
        loader = data.DataLoader(ds, shuffle=True, sampler=sampler)  # BUG
        """,
        fixed="""
        import torch.utils.data as data
        sampler = data.RandomSampler(ds)
        loader = data.DataLoader(ds, sampler=sampler)  # BUG
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        from torch.utils.data.dataloader import DataLoader as DL
        loader = DL(ds, shuffle=True, batch_sampler=bucket_sampler)  # BUG
        """,
        fixed="""
        from torch.utils.data.dataloader import DataLoader as DL
        loader = DL(ds, batch_sampler=bucket_sampler)  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        import torch
        from torch.utils.data import DataLoader, SequentialSampler
        a = DataLoader(ds, 64, True, SequentialSampler(ds), num_workers=4)  # BUG
        b = DataLoader(  # BUG
            ds,
            sampler=torch.utils.data.RandomSampler(ds),
            shuffle=True,
        )
        """,
        fixed="""
        import torch
        from torch.utils.data import DataLoader, SequentialSampler
        a = DataLoader(ds, 64, False, SequentialSampler(ds), num_workers=4)  # BUG
        b = DataLoader(  # BUG
            ds,
            sampler=torch.utils.data.RandomSampler(ds),
        )
        """,
    ),
]
