from __future__ import annotations

import libcst as cst

from lint_rules.analysis.context import in_test, library_module
from lint_rules.analysis.names import DATA_PARALLEL
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn301 as examples


# What a script offers instead of DataParallel: one process per GPU.
_DISTRIBUTED = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.",
                "torch.distributed.")


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
    purpose.

    Confidence: in a training script that offers nothing else (it trains, here or
    through a project function it calls; it is not a library module; no
    `DistributedDataParallel`, FSDP or process group appears in it) and applies it
    unconditionally, the finding is *certain* and reported by default. Libraries
    that offer DataParallel as one strategy among others, a fallback under an `if`
    (`if torch.cuda.device_count() > 1:`), scripts that offer DDP too, and
    inference-only scripts are *possible* (`--preview`).

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
            self.report(node, certain=self._certain() and not self._conditional(node))

    def _conditional(self, node: cst.Call) -> bool:
        """Under an ``if`` (``if torch.cuda.device_count() > 1:``, ``if args.multi_gpu:``): a deliberate
        multi-GPU fallback that the authors chose, not the one way the script trains."""
        return any(isinstance(a, (cst.If, cst.IfExp)) for a in self.model.ancestors(node))

    def _certain(self) -> bool:
        """A training script that offers nothing else: it trains (here, or through a project function
        it calls), is not a library module offering strategies to its users, and mentions no
        distributed alternative (DDP, FSDP, a process group) that DataParallel would be the
        deliberate fallback to."""
        model = self.model
        if library_module(model) or not model.training.file_trains():
            return False
        return not any((q := model.qualified_name(c.func)) is not None and q.startswith(_DISTRIBUTED)
                       for c in model.nodes(cst.Call))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            if self.model.qualified_name(base.value) == DATA_PARALLEL:
                self.report(base)
