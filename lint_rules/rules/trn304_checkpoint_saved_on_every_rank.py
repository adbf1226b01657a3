from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import keyword_arg
from lint_rules.analysis.rank_guards import GLOBAL, LOCAL, RankGuards
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn304 as examples

_INIT_PROCESS_GROUP = frozenset({
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "torch.distributed.device_mesh.init_device_mesh",
})
_SAVE = "torch.save"
_BUFFERS = frozenset({"io.BytesIO", "io.StringIO"})


class CheckpointSavedOnEveryRank(Rule):
    """
    ## What it does
    In a file that initialises a process group (`torch.distributed.init_process_group`,
    `init_device_mesh`), flags `torch.save(...)` that is not guarded by a
    global-rank-0 condition: `if rank == 0:`, `if dist.get_rank() == 0:`,
    `if is_main_process():`, `if master_process:`, `if self.global_rank == 0:`, an
    early `if rank != 0: return`, a `@rank_zero_only` decorator, or a helper that is
    only called under such a guard. A guard on the *local* rank (`local_rank == 0`,
    `rank % ngpus_per_node == 0`) is flagged with its own message. Saves to a
    per-rank path (`f"shard_{rank}.pt"`) or to an in-memory buffer are quiet.

    ## Why is this bad?
    Every process runs the training script, so an unguarded `torch.save` writes the
    same checkpoint once per rank. On a shared filesystem 8 or 64 processes race on
    one file: the run slows down on I/O and can leave a truncated or interleaved
    checkpoint that fails to load when you resume (`PytorchStreamReader failed
    reading zip archive`). A `local_rank == 0` guard looks right on one machine and
    still lets one process per node write the same file on multi-node runs.

    ## Example
    ```python
    dist.init_process_group("nccl")
    ...
    torch.save(model.module.state_dict(), "checkpoint.pt")
    ```

    Use instead:
    ```python
    dist.init_process_group("nccl")
    ...
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "checkpoint.pt")
    dist.barrier()
    ```

    ## Known problems
    Only files that call `init_process_group` themselves are checked: a trainer
    module whose launcher initialises the group elsewhere is not. Guards are
    recognised by shape and spelling (a comparison of something called `rank` with 0,
    a flag or helper named like `master_process`/`is_main_process`); a guard spelled
    otherwise (`if self.is_writer:`) is reported, and an unrelated flag that happens to
    be named `is_primary` silences the rule. A value compared with 0 is taken as the
    global rank unless its name or assignment says local (`LOCAL_RANK`), so a
    `gpu_id == 0` guard is accepted. Sharded checkpoints (FSDP `SHARDED_STATE_DICT`)
    written by every rank on purpose should use per-rank paths or `torch.distributed.checkpoint`.

    ## References
    - https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints
    - https://pytorch.org/tutorials/intermediate/ddp_series_multinode.html
    - https://pytorch.org/docs/stable/distributed.html#torch.distributed.get_rank
    """

    CODE = "TRN304"
    REQUIRES = ("init_process_group", "init_device_mesh")
    NAME = "checkpoint-saved-on-every-rank"
    MESSAGE = "torch.save runs on every rank of the process group: all processes write the same checkpoint"
    FIX_TITLE = "Save only on global rank 0 (`if dist.get_rank() == 0:`) and barrier before loading"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    LOCAL_MESSAGE = ("torch.save is guarded by the local rank: on a multi-node run one process per node "
                     "writes the same checkpoint; guard on the global rank instead")

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._guards = model.fact(RankGuards)
        self._saves: list[cst.Call] = []
        self._initialises = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        leaf = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if leaf is None:
            return
        if leaf in ("init_process_group", "init_device_mesh"):
            if self.model.qualified_name(func) in _INIT_PROCESS_GROUP:
                self._initialises = True
        elif (leaf == "save" or isinstance(func, cst.Name)) and self.model.qualified_name(func) == _SAVE:
            self._saves.append(node)

    def finish(self) -> None:
        if not self._initialises:
            return
        for call in self._saves:
            if self._per_rank_target(call):
                continue
            guard = self._guards.guard_of(call, 0)
            if guard == GLOBAL:
                continue
            self.report(call, self.LOCAL_MESSAGE if guard == LOCAL else None)

    def _per_rank_target(self, call: cst.Call) -> bool:
        """`torch.save(obj, f"shard_{rank}.pt")`, `torch.save(obj, io.BytesIO())`."""
        arg = keyword_arg(call, "f")
        if arg is None:
            positional = [a for a in call.args if a.keyword is None and not a.star]
            if len(positional) < 2:
                return False
            arg = positional[1]
        target = arg.value
        value = self._guards.single_value(target) if isinstance(target, cst.Name) else None
        for expr in (target, value):
            if expr is None:
                continue
            if isinstance(expr, cst.Call) and self.model.qualified_name(expr.func) in _BUFFERS:
                return True
            if _mentions_rank(expr):
                return True
        return False


def _mentions_rank(expr: cst.CSTNode) -> bool:
    """A path built from a rank: `f"shard_{rank}.pt"`, `path + str(dist.get_rank())`."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, cst.Name) and "rank" in e.value.lower():
            return True
        if isinstance(e, cst.Attribute):
            if "rank" in e.attr.value.lower():
                return True
            stack.append(e.value)
        elif not isinstance(e, (cst.SimpleString, cst.FormattedStringText)):
            stack.extend(e.children)
    return False
