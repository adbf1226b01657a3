from __future__ import annotations

import libcst as cst

from lint_rules.analysis.context import in_test
from lint_rules.analysis.names import DATA_PARALLEL
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn301 as examples


class DataParallel(Rule):
    """
    ## What it does
    Flags constructing or subclassing `torch.nn.DataParallel` under any spelling or
    alias (`nn.DataParallel`, `torch.nn.parallel.DataParallel`,
    `from torch.nn.parallel.data_parallel import DataParallel as DP`, ...).
    `isinstance` checks are not flagged.

    ## Why is this bad?
    `DataParallel` runs one Python process that scatters every batch and gathers
    every output through GPU 0 each step. It is usually slower than a single GPU
    beyond two devices, unbalances memory onto GPU 0, and PyTorch recommends against
    it: it is no longer maintained.

    ## Example
    ```python
    model = nn.DataParallel(model)
    ```

    Use instead:
    ```python
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    ```
    launched with `torchrun --nproc_per_node=N train.py`.

    ## Known problems
    `DataParallel` reached through `getattr` or a string is not seen. Tests
    (`def test_*`, `unittest.TestCase` methods) are not reported: they build it on
    purpose. Libraries that offer a DataParallel option to their users, and
    single-process inference scripts, are still reported: the rule is in the
    preview tier for that reason.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html
    - https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
    """

    CODE = "TRN301"
    REQUIRES = ("DataParallel",)
    NAME = "data-parallel"
    MESSAGE = "nn.DataParallel is slow and unmaintained; use DistributedDataParallel"
    FIX_TITLE = "Use torch.nn.parallel.DistributedDataParallel with one process per GPU"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.qualified_name(node.func) == DATA_PARALLEL and not in_test(self.model, node):
            self.report(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            if self.model.qualified_name(base.value) == DATA_PARALLEL:
                self.report(base)
