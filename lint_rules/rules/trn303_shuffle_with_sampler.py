from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import is_none, is_true, keyword_arg
from lint_rules.analysis.names import DATA_LOADERS
from lint_rules.rule import Invalid, Rule, Valid


class ShuffleWithSampler(Rule):
    """
    ## What it does
    Flags `DataLoader(..., shuffle=True, sampler=...)` and
    `DataLoader(..., shuffle=True, batch_sampler=...)` with a sampler that is not
    `None`.

    ## Why is this bad?
    `DataLoader` raises `ValueError: sampler option is mutually exclusive with
    shuffle` when it is built. In a job script that line often runs only after the
    job has waited in the queue and loaded its data; caught here, it costs nothing.
    With a `DistributedSampler`, shuffling is the sampler's job (`shuffle=True` is
    its default).

    ## Example
    ```python
    loader = DataLoader(ds, batch_size=64, shuffle=True, sampler=DistributedSampler(ds))
    ```

    Use instead:
    ```python
    loader = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds, shuffle=True))
    ```

    ## Known problems
    Only a literal `shuffle=True` is flagged; `shuffle=(sampler is None)`, the usual
    correct idiom, stays quiet.

    ## References
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
    """

    CODE = "TRN303"
    NAME = "shuffle-with-sampler"
    MESSAGE = "DataLoader(shuffle=True) with a sampler raises ValueError at run time"
    FIX_TITLE = "Remove shuffle=True; let the sampler shuffle"

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
            """
        ),
        Invalid(
            """
            import torch.utils.data as data
            sampler = data.RandomSampler(ds)
            loader = data.DataLoader(ds, shuffle=True, sampler=sampler)  # BUG
            """
        ),
        Invalid(
            """
            from torch.utils.data.dataloader import DataLoader as DL
            loader = DL(ds, shuffle=True, batch_sampler=bucket_sampler)  # BUG
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.qualified_name(node.func) not in DATA_LOADERS:
            return
        shuffle = _argument(node, "shuffle")
        if shuffle is None or not is_true(shuffle):
            return
        for name in ("sampler", "batch_sampler"):
            arg = _argument(node, name)
            if arg is not None and not is_none(arg):
                self.report(node)
                return


# DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, ...)
_POSITIONS = {"shuffle": 2, "sampler": 3, "batch_sampler": 4}


def _argument(call: cst.Call, name: str) -> cst.BaseExpression | None:
    arg = keyword_arg(call, name)
    if arg is not None:
        return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    index = _POSITIONS[name]
    return positional[index].value if index < len(positional) else None
