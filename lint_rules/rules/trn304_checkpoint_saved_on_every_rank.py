from __future__ import annotations

import re

import libcst as cst

from lint_rules.analysis.model import ASSIGN, dotted, keyword_arg
from lint_rules.rule import WARNING, Invalid, Rule, Valid

_INIT_PROCESS_GROUP = frozenset({
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "torch.distributed.device_mesh.init_device_mesh",
})
_SAVE = "torch.save"
_BUFFERS = frozenset({"io.BytesIO", "io.StringIO"})

GLOBAL = "global"  # only global rank 0 runs the block
LOCAL = "local"  # one process per node runs it
UNKNOWN = "unknown"  # a function only called from other files

# Flags and helpers that name the main process: master_process, is_main_process(),
# utils.is_primary(args), trainer.is_global_zero, @rank_zero_only.
_MAIN_NAME = re.compile(
    r"master|main_process|is_main|primary|rank_?0|rank_zero|global_zero|is_chief|is_root", re.I)
_LOCAL_NAME = re.compile(r"local", re.I)
# Things compared with 0 that hold a rank: rank, args.rank, self.global_rank, ddp_rank,
# dist.get_rank(), int(os.environ["RANK"]); gpu ids name a rank on single-node scripts.
_RANK_TEXT = re.compile(r"rank|gpu_?id|(^|\W)gpu($|\W)", re.I)
_LOCAL_RANK_TEXT = re.compile(r"local_?rank|LOCAL_RANK|local_process_index", re.I)
_EXITS = (cst.Return, cst.Continue, cst.Break, cst.Raise)


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
    NAME = "checkpoint-saved-on-every-rank"
    MESSAGE = "torch.save runs on every rank of the process group: all processes write the same checkpoint"
    FIX_TITLE = "Save only on global rank 0 (`if dist.get_rank() == 0:`) and barrier before loading"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    LOCAL_MESSAGE = ("torch.save is guarded by the local rank: on a multi-node run one process per node "
                     "writes the same checkpoint; guard on the global rank instead")

    VALID = [
        Valid(
            """
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            for epoch in range(epochs):
                train_one_epoch(model, loader, optimizer)
                if dist.get_rank() == 0:
                    torch.save(model.module.state_dict(), "ckpt.pt")
                dist.barrier()
            """
        ),
        Valid(
            """
            # a flag set from the global rank, an early return, and a guarded helper
            import os
            import torch
            from torch.distributed import init_process_group
            init_process_group(backend="nccl")
            ddp_rank = int(os.environ["RANK"])
            master_process = ddp_rank == 0

            def save_snapshot(state, path):
                torch.save(state, path)

            def save_best(state):
                if not is_main_process():
                    return
                torch.save(state, "best.pt")

            for it in range(max_iters):
                step()
                if it % eval_interval == 0 and master_process:
                    torch.save(raw_model.state_dict(), "ckpt.pt")
                    save_snapshot(raw_model.state_dict(), "snapshot.pt")
            """
        ),
        Valid(
            """
            # per-rank shards, an in-memory buffer, and a file without a process group
            import io
            import torch
            import torch.distributed as dist
            def worker(rank, world_size):
                dist.init_process_group("gloo", rank=rank, world_size=world_size)
                torch.save(optimizer.state_dict(), f"optim_rank{rank}.pt")
                buffer = io.BytesIO()
                torch.save(obj, buffer)
            class Trainer:
                def train(self, epochs):
                    for epoch in range(epochs):
                        self._run_epoch(epoch)
                        if self.global_rank == 0 and epoch % self.save_every == 0:
                            self._save(epoch)
                def _save(self, epoch):
                    torch.save(self.model.module.state_dict(), "ckpt.pt")
            """
        ),
        Valid(
            """
            # a rank-zero-only decorator, and a rank check in the else branch
            import torch
            torch.distributed.init_process_group("nccl")
            @rank_zero_only
            def save(model):
                torch.save(model.state_dict(), "model.pt")
            if torch.distributed.get_rank() != 0:
                pass
            else:
                torch.save(model.state_dict(), "final.pt")
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            for epoch in range(epochs):
                train_one_epoch(model, loader, optimizer)
                torch.save(model.module.state_dict(), "ckpt.pt")  # BUG
            """
        ),
        Invalid(
            """
            # a local-rank guard: one writer per node
            import os
            import torch
            from torch.distributed import init_process_group
            class Trainer:
                def __init__(self):
                    init_process_group(backend="nccl")
                    self.gpu_id = int(os.environ["LOCAL_RANK"])

                def _save_snapshot(self, epoch):
                    torch.save({"epoch": epoch}, "snapshot.pt")  # BUG

                def train(self, epochs):
                    for epoch in range(epochs):
                        if self.gpu_id == 0:
                            self._save_snapshot(epoch)
                    if args.local_rank == 0:
                        torch.save(self.model.state_dict(), "final.pt")  # BUG
            """
        ),
        Invalid(
            """
            # the worker function runs on every rank and the helper is called unguarded
            import torch
            import torch.distributed as dist
            import torch.multiprocessing as mp
            from torch import save as save_file

            def checkpoint(model, path):
                save_file(model.state_dict(), path)  # BUG

            def worker(rank, world_size):
                dist.init_process_group("gloo", rank=rank, world_size=world_size)
                train(model)
                checkpoint(model, "model.pt")

            mp.spawn(worker, args=(2,), nprocs=2)
            """
        ),
        Invalid(
            """
            # a per-node guard in the imagenet style
            import torch
            import torch.distributed as dist
            dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url)
            for epoch in range(args.epochs):
                train(loader, model)
                if not args.distributed or args.rank % ngpus_per_node == 0:
                    torch.save(model.state_dict(), "checkpoint.pth.tar")  # BUG
            """
        ),
    ]

    def __init__(self, model) -> None:
        super().__init__(model)
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
            guard = self._guard_of(call, 0)
            if guard == GLOBAL:
                continue
            self.report(call, self.LOCAL_MESSAGE if guard == LOCAL else None)

    # ------------------------------------------------------------ guards
    def _guard_of(self, node: cst.CSTNode, depth: int) -> str | None:
        """GLOBAL/LOCAL when only rank 0 (of the job / of each node) reaches ``node``, else None."""
        model = self.model
        found: str | None = None
        child = node
        for anc in model.ancestors(node):
            if isinstance(anc, cst.If):
                if child is anc.body:
                    found = _stronger(found, self._classify(anc.test, True, 0))
                elif child is anc.orelse:
                    found = _stronger(found, self._classify(anc.test, False, 0))
            elif isinstance(anc, cst.IndentedBlock) or isinstance(anc, cst.Module):
                found = _stronger(found, self._early_exit_guard(anc, child))
            elif isinstance(anc, cst.FunctionDef):
                for d in anc.decorators:
                    text = dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                    if text and _MAIN_NAME.search(text.rsplit(".", 1)[-1]):
                        found = _stronger(found, LOCAL if _LOCAL_NAME.search(text) else GLOBAL)
                if found == GLOBAL:
                    return GLOBAL
                callers = self._callers_guard(anc, depth)
                if callers == UNKNOWN:
                    # Called from elsewhere, under guards we cannot see: trust them,
                    # unless this function's own guard is a local-rank one.
                    return found or GLOBAL
                return _stronger(found, callers)
            elif isinstance(anc, (cst.Lambda, cst.ClassDef)):
                return found
            if found == GLOBAL:
                return GLOBAL
            child = anc
        return found

    def _early_exit_guard(self, block: cst.CSTNode, child: cst.CSTNode) -> str | None:
        """`if rank != 0: return` (or continue/raise) earlier in the same block."""
        found = None
        for stmt in block.body:
            if stmt is child:
                break
            if isinstance(stmt, cst.If) and stmt.orelse is None and _always_exits(stmt.body):
                found = _stronger(found, self._classify(stmt.test, False, 0))
        return found

    def _callers_guard(self, fn: cst.FunctionDef, depth: int) -> str | None:
        """The weakest guard over every use of ``fn`` in this file (None when one is unguarded).

        UNKNOWN for a function this file never calls, or one too many calls deep to follow.
        """
        if depth > 3:
            return UNKNOWN
        uses = self._uses_of(fn)
        if not uses:
            return UNKNOWN
        weakest = GLOBAL
        for use in uses:
            g = self._guard_of(use, depth + 1)
            if g is None:
                return None
            if g == LOCAL:
                weakest = LOCAL
        return weakest

    def _uses_of(self, fn: cst.FunctionDef) -> list[cst.CSTNode]:
        name = fn.name.value
        model = self.model
        out: list[cst.CSTNode] = []
        for node in model.nodes(cst.Call):
            target = None
            for expr in (node.func, *(a.value for a in node.args)):
                if isinstance(expr, cst.Name) and expr.value == name:
                    target = expr
                elif isinstance(expr, cst.Attribute) and expr.attr.value == name \
                        and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                    target = expr
                if target is not None:
                    break
            if target is None or model.is_inside(node, fn):
                continue
            if isinstance(target, cst.Name):
                bindings = model.bindings_of(target)
                if not bindings or not any(b.value is fn for b in bindings):
                    continue
            out.append(node)
        return out

    def _classify(self, test: cst.BaseExpression, positive: bool, depth: int) -> str | None:
        """Which processes pass ``test`` (when ``positive``) or fail it (when not)."""
        if depth > 4:
            return None
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._classify(test.expression, not positive, depth + 1)
        if isinstance(test, cst.BooleanOperation):
            left = self._classify(test.left, positive, depth + 1)
            right = self._classify(test.right, positive, depth + 1)
            return _stronger(left, right)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._classify_comparison(test, positive)
        if isinstance(test, (cst.Name, cst.Attribute, cst.Call)):
            if isinstance(test, cst.Name):
                value = self._single_value(test)
                if isinstance(value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
                    return self._classify(value, positive, depth + 1)
            text = dotted(test.func if isinstance(test, cst.Call) else test)
            if text is None:
                return None
            leaf = text.rsplit(".", 1)[-1]
            if positive and _MAIN_NAME.search(leaf):
                return LOCAL if _LOCAL_NAME.search(leaf) else GLOBAL
            if not positive and _RANK_TEXT.search(leaf):
                # `if rank: return` exits on every rank but 0
                return self._rank_kind(test)
        return None

    def _classify_comparison(self, test: cst.Comparison, positive: bool) -> str | None:
        target = test.comparisons[0]
        op, left, right = target.operator, test.left, target.comparator
        if _is_zero(left):
            left, right = right, left
            op = {cst.LessThan: cst.GreaterThan(), cst.GreaterThan: cst.LessThan()}.get(type(op), op)
        if not _is_zero(right) and not isinstance(op, (cst.In, cst.NotIn)):
            return None
        if isinstance(op, (cst.In, cst.NotIn)):
            # `local_rank in [-1, 0]`: 0 among a literal's elements
            if not isinstance(right, (cst.List, cst.Tuple, cst.Set)) \
                    or not any(_is_zero(e.value) for e in right.elements):
                return None
            selects_zero = isinstance(op, cst.In)
        elif isinstance(op, (cst.Equal, cst.LessThanEqual, cst.Is)):
            selects_zero = True
        elif isinstance(op, (cst.NotEqual, cst.GreaterThan, cst.IsNot)):
            selects_zero = False
        else:
            return None
        if selects_zero != positive:
            return None
        if isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo):
            # `rank % ngpus_per_node == 0`: the first process of every node
            return LOCAL if self._rank_kind(left.left) is not None else None
        return self._rank_kind(left)

    def _rank_kind(self, expr: cst.CSTNode) -> str | None:
        """GLOBAL/LOCAL for an expression that holds a rank, else None."""
        text = self.model.module.code_for_node(expr)
        if _LOCAL_RANK_TEXT.search(text):
            return LOCAL
        if not _RANK_TEXT.search(text):
            return None
        # `self.gpu_id = int(os.environ["LOCAL_RANK"])`: the assignment says local
        value = self._single_value(expr)
        if value is not None and _LOCAL_RANK_TEXT.search(self.model.module.code_for_node(value)):
            return LOCAL
        return GLOBAL

    def _single_value(self, expr: cst.CSTNode) -> cst.CSTNode | None:
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        bindings = self.model.bindings_of(expr)
        values = [b.value for b in bindings or () if b.kind == ASSIGN and b.value is not None]
        if len(values) == 1 and len(bindings) == 1:
            return values[0]
        return None

    def _per_rank_target(self, call: cst.Call) -> bool:
        """`torch.save(obj, f"shard_{rank}.pt")`, `torch.save(obj, io.BytesIO())`."""
        arg = keyword_arg(call, "f")
        if arg is None:
            positional = [a for a in call.args if a.keyword is None and not a.star]
            if len(positional) < 2:
                return False
            arg = positional[1]
        target = arg.value
        value = self._single_value(target) if isinstance(target, cst.Name) else None
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


def _stronger(a: str | None, b: str | None) -> str | None:
    if GLOBAL in (a, b):
        return GLOBAL
    return a or b


def _is_zero(expr: cst.CSTNode) -> bool:
    return isinstance(expr, cst.Integer) and expr.value == "0"


def _always_exits(body: cst.BaseSuite) -> bool:
    stmts = body.body
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, _EXITS) for s in last.body)
    return False
