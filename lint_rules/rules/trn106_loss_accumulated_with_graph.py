from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import LOADER, LOSS
from lint_rules.analysis.loss_graphs import LossGraphs
from lint_rules.analysis.model import dotted
from lint_rules.analysis.summaries import STEP
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn106 as examples

_APPENDS = frozenset({"append", "extend", "insert"})
_ITER_WRAPPERS = frozenset({"builtins.enumerate", "builtins.iter", "builtins.zip"})


class LossAccumulatedWithGraph(Rule):
    """
    ## What it does
    Flags a loss tensor (the result of a criterion, of an `F.*_loss` function, or a
    value `backward()` is called on) accumulated across loop iterations without
    `.detach()` or `.item()`: `total += loss`, `total = total + loss`,
    `losses.append(loss)`, `self.epoch_loss += loss` in a per-step helper, and a
    step's output dict kept whole (`history.append(out)` after `out["loss"].backward()`,
    unless the entry was replaced, `out["loss"] = out["loss"].detach()`). The loop
    is a training loop, or a loop over a `DataLoader`, and the accumulator outlives
    the iteration. Quiet under `torch.no_grad()`, for accumulators reset at the top
    of the iteration (`loss = loss + aux` in one step), and for accumulators that are
    themselves backpropagated (`sum(losses).backward()`).

    Confidence: a local running total in a loop that steps an optimizer, which
    nothing in the loops around it rebinds or clears (`total = 0.0` before the
    loop, `total += loss` inside, nothing else), is *certain* and reported by
    default: every step's graph stays alive until the loop ends. A tensor total
    cleared in place (`total.zero_()`, `total.fill_(0)`) is never reset either:
    autograd records the in-place op on top of its history, so it is certain too. A sum in a loop
    with no optimizer step (a loss function adding up chunks) may be what the
    caller backpropagates: *possible*. A total reset every N steps (a logging window, gradient
    accumulation) holds N graphs and is *possible* (`--preview`).

    ## Why is this bad?
    A loss that requires grad holds its whole autograd graph: every activation saved
    for backward. Adding it to a running total links this iteration's graph to the
    total, so no graph is ever freed. Memory grows every step until the run dies
    with `CUDA out of memory` after some hundreds or thousands of steps, or slows to
    a crawl on CPU, while the logged numbers look fine.

    ## Example
    ```python
    total_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    Use instead:
    ```python
    total_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()  # or loss.item() when logging
    ```

    ## Known problems
    Accumulators hidden in helper objects (`meter.update(loss)`) are not followed, and
    only `append`/`extend`/`insert` on a list are recognised. A reset inside an `if`
    before the accumulation is not counted as a reset, so a total cleared every N
    steps is still flagged (it keeps N graphs alive). A loss recognised only through
    its spelling is not a loss: the value must come from a criterion, a loss
    function, or a `backward()` call.

    ## References
    - https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
    - https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html
    - https://pytorch.org/docs/stable/generated/torch.Tensor.item.html
    """

    CODE = "TRN106"
    NAME = "loss-accumulated-with-graph"
    MESSAGE = ("Loss accumulated across iterations with its autograd graph: every iteration's graph "
               "stays alive until memory runs out")
    FIX_TITLE = "Accumulate `loss.detach()` (or `loss.item()` for logging)"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._graphs = model.fact(LossGraphs)

    # ------------------------------------------------------------------ visits
    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            return
        if self.model.kind_of(node.value) != LOSS:
            return
        self._check(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, cst.BinaryOperation) \
                or not isinstance(value.operator, (cst.Add, cst.Subtract)):
            return
        target = node.targets[0].target
        text = dotted(target)
        if text is None:
            return
        if dotted(value.left) == text:
            other = value.right
        elif dotted(value.right) == text and isinstance(value.operator, cst.Add):
            other = value.left
        else:
            return
        if self.model.kind_of(other) != LOSS:
            return
        self._check(node, target, other)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _APPENDS or not node.args:
            return
        receiver = func.value
        if dotted(receiver) is None:
            return
        arg = node.args[-1].value
        if func.attr.value == "extend":
            if not isinstance(arg, (cst.List, cst.Tuple)) or not arg.elements:
                return
            if not any(self.model.kind_of(e.value) == LOSS for e in arg.elements):
                return
        elif self.model.kind_of(arg) != LOSS and not self._graphs.holds_backpropagated_entry(arg, node):
            return
        self._check(node, receiver, arg)

    # ------------------------------------------------------------------ checks
    def _check(self, node: cst.CSTNode, target: cst.CSTNode, value: cst.CSTNode) -> None:
        model = self.model
        if model.in_no_grad(node) or self._graphs.holds_no_graph(value):
            return
        holder = target.value if isinstance(target, cst.Subscript) else target
        if dotted(holder) is None:
            return
        if self._graphs.feeds_backward(holder):
            return
        loops = model.enclosing_loops(node)
        if loops:
            if not self._iterates_steps_or_data(loops):
                return
            if self._graphs.rebound_before(holder, node, loops[0]):
                return
            self.report(node, certain=self._never_reset(holder, node, loops[-1]))
            return
        # A per-step helper called from the training loop: attributes outlive the call.
        fn = model.enclosing_function(node)
        if not isinstance(fn, cst.FunctionDef) or not (dotted(holder) or "").startswith("self."):
            return
        if id(fn) not in model.training.per_iteration_step_functions():
            return
        if self._graphs.rebound_before(holder, node, fn):
            return
        self.report(node)

    def _never_reset(self, holder: cst.CSTNode, node: cst.CSTNode, outermost: cst.CSTNode) -> bool:
        """Certain: a local accumulator that nothing in the loops around it rebinds or clears (a
        running total over the whole run, every graph of it alive), as opposed to a window reset
        every N steps, which holds N graphs, or a sum that one later step backpropagates."""
        model = self.model
        if not isinstance(holder, cst.Name):
            return False
        bindings = model.bindings_of(holder)
        if not bindings or any(b.node is not node and model.is_inside(b.node, outermost) for b in bindings):
            return False
        name = holder.value
        # The loop steps an optimizer: each loss was backpropagated and applied already, so the total is
        # only kept (for a log or a return value). A loop with no step (a loss function summing chunks)
        # may hand the sum to a caller's backward.
        if not any(e.kind == STEP for e in model.training.events_within(outermost)):
            return False
        # total.clear() empties a list of losses and total.detach_() cuts the history: each frees the
        # graphs kept so far. An in-place total.zero_() or total.fill_(0) does not: autograd records it
        # (ZeroBackward) on top of the history, so the chain of every step's graph stays alive.
        for call in model.within(cst.Call, outermost):
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name \
                    and func.attr.value in ("clear", "pop", "detach_"):
                return False
        return True

    def _iterates_steps_or_data(self, loops: list[cst.CSTNode]) -> bool:
        facts = self.model.training
        for loop in loops:
            if facts.is_training_loop(loop):
                return True
            if isinstance(loop, cst.For) and self._is_loader(loop.iter):
                return True
        return False

    def _is_loader(self, expr: cst.CSTNode) -> bool:
        model = self.model
        for _ in range(3):
            if model.kind_of(expr) == LOADER:
                return True
            # enumerate(loader), zip(loader, ...), tqdm(loader)
            if isinstance(expr, cst.Call) and expr.args:
                q = model.qualified_name(expr.func)
                if q in _ITER_WRAPPERS or (q or "").startswith("tqdm."):
                    expr = expr.args[0].value
                    continue
            return False
        return False
