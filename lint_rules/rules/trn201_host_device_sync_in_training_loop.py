from __future__ import annotations


import libcst as cst

from lint_rules.analysis.kinds import LEAF, LOSS, MODULE, PARAMETER, TENSOR
from lint_rules.analysis.context import in_test
from lint_rules.analysis.frequency import iteration_context, walks_elements
from lint_rules.analysis.guards import is_rare_condition, loop_counters
from lint_rules.analysis.training import STEP
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn201 as examples

_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
_CASTS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})
_TENSORISH = frozenset({TENSOR, LOSS, LEAF, PARAMETER})
# Conditions that run a block only now and then: `step % log_every == 0`, `if i == 0`,
# or a flag whose name says so.


class HostDeviceSyncInTrainingLoop(Rule):
    """
    ## What it does
    Flags operations that copy a tensor to the host inside a training step loop:
    `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `float()`/`int()`/`bool()` of a
    tensor, and `print()` of a tensor. Quiet under a logging-interval condition
    (`if step % log_every == 0:`, `if i == 0:`), after the loop, inside nested
    functions, and in loops that neither call `backward()` nor step an optimizer
    (evaluation loops).

    ## Why is this bad?
    On a GPU each of these blocks the Python thread until every queued kernel has
    finished, so the CPU can no longer run ahead and queue the next step. One
    `.item()` per step commonly costs 5-30% of throughput, silently.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    ```

    Use instead:
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
        if step % log_every == 0:
            print(running_loss.item() / log_every)
    ```

    Confidence: a sync in a loop nested inside the training step that walks the
    elements of a tensor or the parameters of a model (`for row in logits:`,
    `for p in model.parameters():`, `range(len(t))`: one sync per element, every
    step) or one whose result is thrown away (`loss.item()` alone) is *certain* and
    reported by default. A per-step log or running total (`total += loss.item()`,
    `print(loss)`, a progress bar), a loop over a dict of named metrics, over
    micro-batches or time steps, and syncs in tests are often a deliberate price
    and are *possible* (`--preview`).

    ## Known problems
    On CPU-only training the copy is cheap, and the finding is a portability note.
    `float(x)`/`print(x)` are flagged only when `x` is known to be a tensor (a loss,
    a model output, a `torch.*` result). Conditions that run rarely but say so in no
    recognisable way (`if should_log:`) are not recognised; suppress with
    `# noqa: TRN201`.

    ## References
    - https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization
    - https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html
    """

    CODE = "TRN201"
    REQUIRES = ("backward", "step")
    NAME = "host-device-sync-in-training-loop"
    MESSAGE = "Host-device synchronisation in the training loop blocks on the GPU every step"
    FIX_TITLE = "Accumulate on the device and sync only at a logging interval"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        op = self._sync_op(node)
        if op is None:
            return
        where = self._in_step_loop(node)
        if not where:
            return
        # Tests run a few steps on purpose and read values to assert on them: never certain.
        sure = not in_test(self.model, node)
        if where is _PER_ELEMENT:
            self.report(node, f"`{op}` in a loop inside the training step forces a host-device sync per "
                              f"element, every step", certain=sure)
        elif where is _PER_ITERATION:  # a loop over named metrics, micro-batches or time steps
            self.report(node, f"`{op}` in a loop inside the training step forces a host-device sync every "
                              f"iteration, every step")
        elif op != "print(tensor)" and isinstance(self.model.parent(node), cst.Expr):
            # `loss.item()` alone: a sync for nothing (a print's output is its use)
            self.report(node, f"`{op}` in the training loop forces a host-device sync every step, and its "
                              f"result is not used", certain=sure)
        else:  # a per-step log or running total: often deliberate
            self.report(node, f"`{op}` in the training loop forces a host-device sync every step")

    def _sync_op(self, node: cst.Call) -> str | None:
        func = node.func
        model = self.model
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method not in _SYNC_METHODS or (method != "cpu" and node.args):
                return None
            receiver = func.value
            if model.kind_of(receiver) == MODULE:
                return None
            if self._chain_has_sync(receiver):
                return None  # report the first sync of a chain once
            if method == "numpy" and not _looks_like_tensor_chain(receiver):
                return None
            return f".{method}()"
        q = model.qualified_name(func)
        if q in _CASTS and len(node.args) == 1:
            arg = node.args[0].value
            if model.kind_of(arg) in _TENSORISH and not self._chain_has_sync(arg):
                return f"{q.split('.', 1)[1]}(tensor)"
            return None
        if q == "builtins.print":
            for arg in node.args:
                if arg.keyword is None and model.kind_of(arg.value) in _TENSORISH:
                    return "print(tensor)"
        return None

    def _chain_has_sync(self, expr: cst.CSTNode) -> bool:
        while True:
            if isinstance(expr, cst.Call):
                func = expr.func
                if isinstance(func, cst.Attribute):
                    if func.attr.value in _SYNC_METHODS:
                        return True
                    expr = func.value
                    continue
                return False
            if isinstance(expr, cst.Attribute):
                expr = expr.value
                continue
            return False

    def _in_step_loop(self, node: cst.CSTNode) -> str | bool:
        """Whether ``node`` runs once per training step (True), or many times per step, in a loop
        nested in the step (:data:`_PER_ELEMENT` when that loop walks a tensor's elements or a model's
        parameters, :data:`_PER_ITERATION` otherwise), or not every step (False)."""
        model = self.model
        facts = model.training
        ctx = iteration_context(
            model, node,
            lambda guard: is_rare_condition(guard.test, loop_counters(model, guard)) and not self._holds_step(guard),
            branches=(cst.If, cst.IfExp), walk_through=facts.step_closures())  # opt.step(closure)
        if ctx.loops:
            if facts.is_step_loop(ctx.loops[0]):
                return True
            if not facts.is_training_loop(ctx.loops[0]) and any(facts.is_step_loop(lp) for lp in ctx.loops[1:]):
                return _PER_ELEMENT if walks_elements(model, ctx.loops[0]) else _PER_ITERATION
            return False
        return isinstance(ctx.stop, cst.FunctionDef) and id(ctx.stop) in facts.per_iteration_step_functions()

    def _holds_step(self, guard: cst.CSTNode) -> bool:
        """`if (i + 1) % accum == 0: opt.step()` marks the step boundary, not a logging interval."""
        return any(e.kind == STEP for e in self.model.training.events_within(guard))



_PER_ELEMENT = "per element"
_PER_ITERATION = "per iteration"


def _looks_like_tensor_chain(expr: cst.CSTNode) -> bool:
    """`.numpy()` also exists on NumPy-like objects; require a tensor-ish chain."""
    return isinstance(expr, (cst.Call, cst.Name, cst.Attribute, cst.Subscript))


