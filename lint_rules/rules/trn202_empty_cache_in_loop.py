from __future__ import annotations

import re

import libcst as cst

from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.frequency import iteration_context
from lint_rules.analysis.guards import is_rare_condition
from lint_rules.rules.examples import trn202 as examples

_EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})
# `if torch.cuda.memory_reserved() > limit:` empties the cache under memory pressure only.
_MEMORY_QUERY = re.compile(r"(max_)?memory_(reserved|allocated|cached|usage)|mem_get_info|memory_stats")


class EmptyCacheInLoop(Rule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` that runs once per training step: in the body
    of a loop that calls `backward()` or steps an optimizer, or in a step helper
    called from such a loop. Quiet once per epoch (after the inner batch loop), under
    a periodic condition (`if step % 100 == 0:`), in an `except` handler (OOM
    recovery), under a memory-pressure test, and in loops that do not train
    (evaluation, batch-size retry loops).

    ## Why is this bad?
    `empty_cache()` synchronises with the GPU and hands every cached, currently unused
    block back to the driver. The next step then has to `cudaMalloc` the same memory
    all over again instead of reusing it from the cache, and the CPU can no longer run
    ahead of the GPU: every step gets slower, most of all for models with many small
    allocations. It frees nothing the caching allocator would not have reused, and it
    cannot fix an out-of-memory error: memory held by live tensors is never released.

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    ```

    Use instead:
    ```python
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        evaluate(model)
        torch.cuda.empty_cache()  # once per epoch, if at all
    ```

    ## Known problems
    Only `torch.cuda.empty_cache` is matched; `torch.mps`/`torch.xpu` equivalents are
    not. A call inside your own helper function is seen only when that helper itself
    calls `backward()`/`step()` and is called from a loop in the same file. Conditions
    that run rarely but say so in no recognisable way (`if should_flush:`) still
    count as every step; suppress with `# noqa: TRN202`.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.cuda.memory.empty_cache.html
    - https://pytorch.org/docs/stable/notes/cuda.html#memory-management
    """

    CODE = "TRN202"
    REQUIRES = ("empty_cache",)
    NAME = "empty-cache-in-loop"
    MESSAGE = "torch.cuda.empty_cache() runs every training step: it syncs with the GPU and forces memory to be reallocated"
    FIX_TITLE = "Remove empty_cache() from the step loop, or call it once per epoch"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name != "empty_cache" or self.model.qualified_name(func) not in _EMPTY_CACHE:
            return
        if self._every_step(node):
            self.report(node)

    def _every_step(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` runs at least once per training step."""
        model = self.model
        facts = model.training
        ctx = iteration_context(model, node, lambda guard: _is_occasional(guard.test),
                                stop_at=(cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ExceptHandler))
        # An epoch loop (or a loop that does not train) runs it less often than every
        # step; an outer step loop around an inner loop would not.
        if any(facts.is_step_loop(loop) for loop in ctx.loops):
            return True
        return isinstance(ctx.stop, cst.FunctionDef) and id(ctx.stop) in facts.per_iteration_step_functions()


def _is_occasional(test: cst.BaseExpression) -> bool:
    """A periodic condition (`step % n == 0`), or a memory-pressure test on an allocator query."""
    if is_rare_condition(test):
        return True
    stack: list[cst.CSTNode] = [test]
    while stack:
        expr = stack.pop()
        if isinstance(expr, cst.Call):
            func = expr.func
            leaf = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            if _MEMORY_QUERY.match(leaf):
                return True
            stack.extend(a.value for a in expr.args)
        elif isinstance(expr, cst.Comparison):
            stack.append(expr.left)
            stack.extend(t.comparator for t in expr.comparisons)
        elif isinstance(expr, cst.BooleanOperation):
            stack.extend((expr.left, expr.right))
        elif isinstance(expr, cst.UnaryOperation):
            stack.append(expr.expression)
        elif isinstance(expr, cst.BinaryOperation):
            stack.extend((expr.left, expr.right))
    return False
