from __future__ import annotations

import libcst as cst

from lint_rules.analysis.context import in_test
from lint_rules.analysis.devices import MOVES, built_here, casts_dtype, moved_before
from lint_rules.analysis.model import ASSIGN, keyword_arg
from lint_rules.analysis.training import CLEAR
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn804 as examples

_DDP = "torch.nn.parallel.DistributedDataParallel"
# DistributedDataParallel(module, device_ids=None, output_device=None, ...)
_DEVICE_IDS_POSITION = 1


# Statements that run only sometimes: a rebinding inside one does not replace the value on every path.
_CONDITIONAL = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler, cst.Match)


class DdpModelMovedAfterWrap(Rule):
    """
    ## What it does
    Flags `.to(...)`, `.cuda()` or `.cpu()` called on a module after it was wrapped
    in `DistributedDataParallel`: on the wrapper itself (`model = DDP(model)` then
    `model.to(device)`, `DDP(model).cuda()`) or on its `.module`. Statement order is
    read within one function (or the module). A move after the function's last
    `backward()`/`step()`, outside the training loop (`model.cpu()` before saving),
    is quiet: no gradient sync follows it.

    A plain `torchcheck lint` reports the moves that change the parameters: a dtype
    cast, or a move of a module built in the same function (`DDP(Net())`) that the
    wrap saw without a device (not moved before wrapping, no `device_ids`). A module
    moved before wrapping, or wrapped with `device_ids` (DDP refuses a CPU module
    with them), is usually moved again to the device it is already on, a no-op; a
    module handed in may have been moved by its maker; a test may do it on purpose:
    those findings are possible, reported with `--preview`.

    ## Why is this bad?
    `DistributedDataParallel` is built around the parameters it sees at construction:
    it broadcasts them from rank 0, lays out its gradient buckets on their device and
    hooks their gradient accumulation. Its documentation says never to change the
    parameters after wrapping, because the gradient reduction no longer matches them.
    Moving them afterwards leaves the buckets on the old device: depending on the
    devices and the torch version, backward fails with a device mismatch, every step
    pays extra cross-device copies, or the gradient sync stops matching the parameters
    and the replicas drift apart while every rank reports a plausible loss.

    ## Example
    ```python
    model = DDP(Net())
    model.to(device)
    ```

    Use instead:
    ```python
    model = DDP(Net().to(device), device_ids=[local_rank])
    ```

    ## Known problems
    A wrap in one method and a move in another (`self.model = DDP(...)` in `__init__`,
    `self.model.cuda()` in `train`) are not compared, since their order depends on
    the caller. A `.to(torch.float16)` dtype cast after wrapping is flagged too: it
    changes the parameters DDP was built for in the same way. Wrappers other than
    `DistributedDataParallel` (FSDP, DeepSpeed) are not checked. Whether a second
    move goes to the device the module is on is not decided: such moves are only
    possible findings, including the rare one to another device.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html
    - https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
    """

    CODE = "TRN804"
    REQUIRES = ("DistributedDataParallel", "DDP")
    NAME = "ddp-model-moved-after-wrap"
    MESSAGE = "Module is moved after being wrapped in DistributedDataParallel: gradient sync no longer matches its parameters"
    FIX_TITLE = "Move the module to its device before wrapping it in DistributedDataParallel"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in MOVES:
            return
        receiver = func.value
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "module":
            receiver = receiver.value  # ddp.module.to(...) moves the wrapped parameters
        wraps = self._ddp_calls(receiver, node)
        if wraps and not self._after_training(node):
            self.report(node, certain=self._changes_parameters(node, wraps))

    def _changes_parameters(self, move: cst.Call, wraps: list[cst.Call]) -> bool:
        """Certain when the move cannot be a no-op: a dtype cast, or a module built in the wrap's
        function and wrapped without a device (not moved before, no ``device_ids``). A module
        moved before wrapping, or wrapped with ``device_ids`` (DDP refuses a CPU module with
        them), is usually moved again to the device it is on; one handed in may have been."""
        if in_test(self.model, move):
            return False  # a test may move it on purpose, to exercise the wrapper
        if casts_dtype(self.model, move):
            return True
        return all(self._built_unplaced(wrap) for wrap in wraps)

    def _built_unplaced(self, wrap: cst.Call) -> bool:
        positional = [a for a in wrap.args if a.keyword is None and not a.star]
        return bool(positional) and not self._placed(wrap) and built_here(self.model, positional[0].value, wrap)

    def _placed(self, wrap: cst.Call) -> bool:
        """The module ``wrap`` wraps is on a device already: moved before, or given device_ids."""
        ids = keyword_arg(wrap, "device_ids")
        positional = [a for a in wrap.args if a.keyword is None and not a.star]
        if ids is None and len(positional) > _DEVICE_IDS_POSITION:
            ids = positional[_DEVICE_IDS_POSITION]
        if ids is not None and not (isinstance(ids.value, cst.Name) and ids.value.value == "None"):
            return True
        return bool(positional) and moved_before(self.model, positional[0].value, wrap)

    def _after_training(self, move: cst.Call) -> bool:
        """Whether ``move`` comes after the last backward/step of its function: training is
        over (`model.cpu()` before saving), and no gradient sync follows."""
        model = self.model
        fn = model.enclosing_function(move)
        index = model.order[id(move)]
        before = after = False
        for ev in model.training.function_events(fn):
            if ev.kind == CLEAR:
                continue
            if ev.index < index:
                before = True
            else:
                after = True
        if not before or after:
            return False
        # A move inside the training loop itself runs before the next iteration's steps.
        return not any(model.training.is_training_loop(loop) for loop in model.enclosing_loops(move))

    def _ddp_calls(self, expr: cst.CSTNode, use: cst.CSTNode) -> list[cst.Call]:
        """The ``DistributedDataParallel(...)`` calls whose wrapper ``expr`` can hold at ``use``."""
        model = self.model
        if isinstance(expr, cst.Call):
            return [expr] if model.qualified_name(expr.func) == _DDP else []
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return []
        bindings = model.bindings_of(expr)
        if not bindings:
            return []
        fn = model.enclosing_function(use)
        index = model.order[id(use)]
        earlier = []
        for b in bindings:
            if model.enclosing_function(b.node) is not fn:
                continue
            order = model.order.get(id(b.node))
            if order is None or order >= index or model.mutually_exclusive(b.node, use) \
                    or model.is_inside(use, b.node):  # `net = net.cuda()` reads the old binding
                continue
            earlier.append((order, b))
        # the bindings that can still hold the value here: not replaced by a later one that
        # runs on every path to the move (`if ddp: net = DDP(net) else: net = Local(net)` keeps both)
        killers = [o for o, b in earlier if self._always_runs_before(b.node, use, fn)]
        return [b.value for o, b in earlier
                if b.kind == ASSIGN and isinstance(b.value, cst.Call)
                and model.qualified_name(b.value.func) == _DDP
                and not any(k > o for k in killers)]

    def _always_runs_before(self, stmt: cst.CSTNode, use: cst.CSTNode, fn: cst.CSTNode | None) -> bool:
        for a in self.model.ancestors(stmt):
            if a is fn:
                return True
            if isinstance(a, _CONDITIONAL) and not self.model.is_inside(use, a):
                return False
        return True
