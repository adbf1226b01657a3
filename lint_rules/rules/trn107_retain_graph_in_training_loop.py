from __future__ import annotations

import libcst as cst

from lint_rules.analysis.context import in_test
from lint_rules.analysis.kinds import (CRITERION, DISTRIBUTED_OPTIMIZER, LEAF, LOADER, MODULE, OPTIMIZER,
                                       SCALER, SCHEDULER)
from lint_rules.analysis.model import ASSIGN, FOR, PARAM, WITH, is_true, keyword_arg
from lint_rules.analysis.names import TENSOR_FACTORIES
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.training import BACKWARD, STEP
from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.autograd_flow import value_names
from lint_rules.rules.examples import trn107 as examples

_LOOPS = (cst.For, cst.While)
# Values that are not tensors carrying a graph, whatever the loop does with them.
_NOT_GRAPH_KINDS = frozenset({LEAF, CRITERION, MODULE, OPTIMIZER, SCALER, SCHEDULER, LOADER, DISTRIBUTED_OPTIMIZER})


class RetainGraphInTrainingLoop(Rule):
    """
    ## What it does
    Flags `backward(retain_graph=True)` (on a tensor, through
    `scaler.scale(loss)`, or `torch.autograd.backward`) in a training loop, or in a
    per-step helper called from one, when nothing in the same iteration runs a
    second `backward()` or `torch.autograd.grad()` after it that could use the
    kept graph, and the loss is computed inside the iteration (so the next
    iteration builds its own graph). `retain_graph=<expression>` is left alone:
    `retain_graph=i < n - 1` is the deliberate form.

    A plain `torchcheck lint` reports it in a loop whose iteration runs an
    optimizer step after the backward: the graph then lives on until the next
    iteration has built its own. In a per-step helper, or a function that is a whole
    optimizer step (`zero_grad()`, `backward()`, `step()`) called from anywhere, the
    graph is freed when the function returns; in a loop with no step the gradients
    may serve another purpose; a test may keep it on purpose. Those findings are
    possible, reported with `--preview`.

    ## Why is this bad?
    `retain_graph=True` keeps every saved activation of the graph alive after
    `backward()`. When no second backward uses it, the memory is only freed when
    the loss variable is rebound on the next iteration, so peak memory is up to
    twice what the step needs and batch sizes that should fit run out of memory.
    It is also the usual sign of a papered-over bug: it is added to silence
    `Trying to backward through the graph a second time`, whose real cause is a
    tensor (an RNN hidden state, a running statistic) carried across iterations
    without `.detach()`; with it, each step backpropagates through every earlier
    step and gets slower and slower.

    ## Example
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        out, hidden = model(x, hidden)
        loss = criterion(out, y)
        loss.backward(retain_graph=True)
        optimizer.step()
    ```

    Use instead:
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        hidden = hidden.detach()
        out, hidden = model(x, hidden)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
    ```

    ## Known problems
    The rule does not check that the later `backward()` reaches the kept graph: any
    later backward in the iteration counts, also one run by a helper of the file
    called there. A graph built before the loop from a
    value the loss depends on is recognised only when that value is assigned to a
    variable before the loop (not through attributes such as `self.features`).
    Higher-order uses that call `torch.autograd.grad` through a helper are not seen.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.backward.html
    - https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
    """

    CODE = "TRN107"
    REQUIRES = ("retain_graph",)
    NAME = "retain-graph-in-training-loop"
    MESSAGE = ("backward(retain_graph=True) in a training loop with no later backward in the iteration: "
               "the graph's memory is kept for nothing")
    FIX_TITLE = "Drop retain_graph=True; detach state carried across iterations instead"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value != "backward":
                return
        elif not isinstance(func, cst.Name):
            return
        arg = keyword_arg(node, "retain_graph")
        if arg is None or not is_true(arg.value):
            return
        if not self._is_backward(node):
            return
        region = self._iteration(node)
        if region is None:
            return
        if self._later_backward(node, region):
            return
        if isinstance(region, _LOOPS) and self._graph_from_before(node, region):
            return
        self.report(node, certain=isinstance(region, _LOOPS) and self._steps_after(node, region)
                    and not in_test(self.model, node))

    def _steps_after(self, node: cst.Call, loop: cst.CSTNode) -> bool:
        """An optimizer step follows the backward in the loop's iteration: the loop trains, and
        the kept graph lives on until the next iteration's forward has built its own. In a
        per-step helper the graph is freed when the helper returns, and a loop with no step may
        be computing gradients for another purpose (per-output gradients, saliency)."""
        model = self.model
        here = model.order[id(node)]
        return any(ev.kind == STEP and ev.index > here and not model.mutually_exclusive(ev.node, node)
                   for ev in model.training.events_within(loop))

    def _is_backward(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            q = self.model.qualified_name(func)
            return q is None or not q.startswith("torch.distributed.autograd.")
        return self.model.qualified_name(func) == "torch.autograd.backward"

    def _iteration(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The training loop whose body runs ``node`` once per iteration, or the per-step helper."""
        model = self.model
        facts = model.training
        loops = model.enclosing_loops(node)
        if loops:
            loop = loops[0]
            return loop if facts.is_training_loop(loop) else None
        fn = model.enclosing_function(node)
        if isinstance(fn, cst.FunctionDef) and (id(fn) in facts.per_iteration_step_functions()
                                                or id(fn) in facts.step_closures()
                                                or self._steps_after(node, fn)):
            return fn  # a helper's step, or a function that is a whole optimizer step itself
        return None

    def _later_backward(self, node: cst.Call, region: cst.CSTNode) -> bool:
        """Another backward()/autograd.grad() after ``node`` in the same iteration."""
        model = self.model
        here = model.order[id(node)]
        # a helper called later in the iteration that runs a backward counts too (an actor
        # update through the critic's features)
        for ev in [*model.training.events_within(region), *model.fact(Summaries).helper_events(region)]:
            if ev.kind == BACKWARD and ev.index > here and ev.node is not node \
                    and not model.mutually_exclusive(ev.node, node):
                return True
        for call in model.within(cst.Call, region):
            if model.order[id(call)] <= here:
                continue
            func = call.func
            if isinstance(func, (cst.Attribute, cst.Name)) and _leaf(func) == "grad" \
                    and model.qualified_name(func) == "torch.autograd.grad":
                return True
        return False

    def _graph_from_before(self, node: cst.Call, loop: cst.CSTNode) -> bool:
        """The loss depends on a tensor computed before the loop: its graph is reused next iteration."""
        model = self.model
        func = node.func
        roots: list[cst.CSTNode] = [func.value] if isinstance(func, cst.Attribute) else []
        roots.extend(a.value for a in node.args if a.keyword is None)
        stack = [(r, 0) for r in roots]
        expanded: set[int] = set()
        while stack:
            expr, depth = stack.pop()
            for name in value_names(expr):
                bindings = model.bindings_of(name)
                if not bindings:
                    continue
                # A name rebound in the loop is state carried across iterations (an RNN
                # hidden state): keeping its graph is the bug, not a reason to retain.
                carried = any(model.is_inside(b.node, loop) or b.node is loop for b in bindings)
                if depth == 0 and not carried and any(b.kind == PARAM for b in bindings):
                    return True  # `f.backward(retain_graph=True)` on a tensor handed in: its graph predates the loop
                for b in bindings:
                    if b.kind not in (ASSIGN, FOR, WITH) or b.value is None:
                        continue
                    if model.is_inside(b.node, loop) or b.node is loop:
                        if depth < 4 and id(b.value) not in expanded:
                            expanded.add(id(b.value))
                            stack.append((b.value, depth + 1))
                    elif not carried and b.kind == ASSIGN and self._builds_graph(b.value) \
                            and model.order.get(id(b.node), -1) < model.order[id(loop)]:
                        return True
        return False

    def _builds_graph(self, value: cst.CSTNode) -> bool:
        """A call that may return a tensor with a graph (not a module, an optimizer, a fresh leaf)."""
        if not isinstance(value, cst.Call):
            return False
        model = self.model
        if model.qualified_name(value.func) in TENSOR_FACTORIES:
            return False
        return model.kind_of(value) not in _NOT_GRAPH_KINDS


def _leaf(func: cst.CSTNode) -> str:
    return func.attr.value if isinstance(func, cst.Attribute) else func.value
