from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import ASSIGN
from lint_rules.analysis.training import CLEAR
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn804 as examples

_DDP = "torch.nn.parallel.DistributedDataParallel"
_MOVES = frozenset({"to", "cuda", "cpu"})


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
    model = DDP(model, device_ids=[local_rank])
    model.to(device)
    ```

    Use instead:
    ```python
    model = model.to(device)
    model = DDP(model, device_ids=[local_rank])
    ```

    ## Known problems
    A wrap in one method and a move in another (`self.model = DDP(...)` in `__init__`,
    `self.model.cuda()` in `train`) are not compared, since their order depends on
    the caller. A `.to(torch.float16)` dtype cast after wrapping is flagged too: it
    changes the parameters DDP was built for in the same way. Wrappers other than
    `DistributedDataParallel` (FSDP, DeepSpeed) are not checked.

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
        if not isinstance(func, cst.Attribute) or func.attr.value not in _MOVES:
            return
        receiver = func.value
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "module":
            receiver = receiver.value  # ddp.module.to(...) moves the wrapped parameters
        if self._is_ddp(receiver, node) and not self._after_training(node):
            self.report(node)

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

    def _is_ddp(self, expr: cst.CSTNode, use: cst.CSTNode) -> bool:
        model = self.model
        if isinstance(expr, cst.Call):
            return model.qualified_name(expr.func) == _DDP
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        bindings = model.bindings_of(expr)
        if not bindings:
            return False
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
        return any(b.kind == ASSIGN and isinstance(b.value, cst.Call)
                   and model.qualified_name(b.value.func) == _DDP
                   and not any(k > o for k in killers)
                   for o, b in earlier)

    def _always_runs_before(self, stmt: cst.CSTNode, use: cst.CSTNode, fn: cst.CSTNode | None) -> bool:
        for a in self.model.ancestors(stmt):
            if a is fn:
                return True
            if isinstance(a, _CONDITIONAL) and not self.model.is_inside(use, a):
                return False
        return True
