from __future__ import annotations

import libcst as cst

from lint_rules.analysis.context import in_test
from lint_rules.analysis.names import DATA_PARALLEL
from lint_rules.analysis.loaders import NEEDS as LOADER_NEEDS
from lint_rules.analysis.processes import shards_without_sync, spawned_functions
from lint_rules.analysis.frequency import compounds_each_iteration
from lint_rules.analysis.scopes import keyword_arg
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
    purpose.

    Confidence: where `DataParallel` is wrong, not only slow, the finding is
    *certain* and reported by default: unconditionally in a function that every
    process of `torch.multiprocessing.spawn(worker, ...)` (or a
    `multiprocessing.Process(target=worker)`) runs, where each process replicates
    the model over every visible GPU; unconditionally in a file whose loaders draw
    from a shuffling `DistributedSampler` (each process its own shard, here or from
    a project function) while no `DistributedDataParallel`, FSDP or `all_reduce`
    keeps the processes' models in step; and `model = nn.DataParallel(model)` in a
    loop body, which wraps the wrapper again on every iteration. Everywhere else
    it is *possible* (`--preview`): a script that applies it once works, and moving
    to DDP means a new launcher, a sampler and per-rank logging, a change the
    authors may well decline; libraries offering it as one strategy, fallbacks under
    an `if`, scripts that offer DDP too and inference-only scripts even more so.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html
    - https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
    """

    CODE = "TRN301"
    REQUIRES = ("DataParallel",)
    NEEDS = LOADER_NEEDS
    NAME = "data-parallel"
    MESSAGE = "nn.DataParallel is slow and unmaintained; use DistributedDataParallel"
    FIX_TITLE = "Use torch.nn.parallel.DistributedDataParallel with one process per GPU"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.qualified_name(node.func) != DATA_PARALLEL or in_test(self.model, node):
            return
        if self._rewrapped_in_loop(node):
            self.report(node, "nn.DataParallel is applied again on every iteration of this loop: the model "
                              "is wrapped once more each time (model.module.module...)", certain=True)
        elif self._in_worker(node) and not self._conditional(node):
            self.report(node, "nn.DataParallel in a function that every spawned process runs: each process "
                              "replicates the model over every visible GPU; use DistributedDataParallel with "
                              "one device per process", certain=True)
        elif shards_without_sync(self.model) and not self._conditional(node):
            self.report(node, "nn.DataParallel where a DistributedSampler gives each process its own shard: "
                              "nothing keeps the processes' models in step; use DistributedDataParallel",
                        certain=True)
        else:  # slow and unmaintained, but often a deliberate, working choice: not certain
            self.report(node, certain=False)

    def _conditional(self, node: cst.Call) -> bool:
        """Under an ``if`` (``if torch.cuda.device_count() > 1:``, ``if args.multi_gpu:``): a deliberate
        multi-GPU fallback that the authors chose, not the one way the script trains."""
        return any(isinstance(a, (cst.If, cst.IfExp)) for a in self.model.ancestors(node))

    def _in_worker(self, node: cst.Call) -> bool:
        """Inside a function that each process of ``mp.spawn(worker, ...)`` runs (one GPU each)."""
        fn = self.model.enclosing_function(node)
        return fn is not None and id(fn) in spawned_functions(self.model)

    def _rewrapped_in_loop(self, node: cst.Call) -> bool:
        """``model = nn.DataParallel(model)`` in a loop body, on the last iteration's wrapper."""
        parent = self.model.parent(node)
        arg = keyword_arg(node, "module")
        wrapped = arg.value if arg is not None else (node.args[0].value if node.args and node.args[0].keyword
                                                     is None else None)
        return isinstance(parent, cst.Assign) and wrapped is not None \
            and compounds_each_iteration(self.model, parent, wrapped)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            if self.model.qualified_name(base.value) == DATA_PARALLEL:
                self.report(base)
