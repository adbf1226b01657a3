from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import OPTIMIZER
from lint_rules.analysis.model import ASSIGN, FOR, WITH, call_method, dotted, keyword_arg
from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.frequency import iteration_context
from lint_rules.analysis.guards import is_rare_condition
from lint_rules.analysis.mutations import filled_before
from lint_rules.rules.examples import trn203 as examples

# Calls that read a model's parameters: a value built from them is not a new model.
_PARAM_READERS = frozenset({"parameters", "named_parameters", "param_groups"})


class OptimizerCreatedInLoop(Rule):
    """
    ## What it does
    Flags an optimizer constructed inside an epoch or training loop (a loop that calls
    `backward()` or steps an optimizer, directly or through an inner loop) over the
    parameters of a model that lives across the loop's iterations.

    Quiet for plain `SGD` without momentum (it keeps no state), when the loop
    builds a fresh model in the same iteration (a hyper-parameter sweep, a
    cross-validation fold, an ensemble member; also one the iteration adds to a
    container, `members.append(Net())` then `members[-1].parameters()`), under a one-off condition
    (`if epoch == unfreeze_epoch:`, `if optimizer is None:`), when the iteration
    changes which parameters train before building it (`p.requires_grad = True`,
    `model.unfreeze(...)`: gradual unfreezing), and for loops that do not train.

    ## Why is this bad?
    An optimizer keeps per-parameter state: SGD's momentum buffers, Adam's first and
    second moments and step count. A new optimizer starts that state from zero, so
    Adam re-runs its bias-corrected warm-up every epoch (or every step), momentum never
    builds up, and any LR scheduler attached to the old optimizer silently stops
    affecting training. The loss plateaus higher or spikes at every epoch boundary,
    and nothing raises.

    ## Example
    ```python
    for epoch in range(epochs):
        optimizer = torch.optim.Adam(model.parameters(), lr=lr_at(epoch))
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    ```

    Use instead:
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=lr_at(0))
    for epoch in range(epochs):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    ```

    ## Known problems
    The training loop must be visible in the same function: an epoch loop that only
    calls `train_one_epoch(model, optimizer)` is not recognised as one. A model counts
    as fresh when a name its parameters come from is assigned in the loop body (from
    anything other than `.parameters()`), so `model = self.model` inside the loop also
    silences the rule. Deliberate restarts under conditions that say so in no
    recognisable way are flagged; suppress them with `# noqa: TRN203`.

    ## References
    - https://pytorch.org/docs/stable/optim.html#how-to-use-an-optimizer
    - https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate
    """

    CODE = "TRN203"
    REQUIRES = ("backward", "step")
    NAME = "optimizer-created-in-loop"
    MESSAGE = "Optimizer is constructed inside the training loop: its state (momentum, Adam moments) is reset every iteration"
    FIX_TITLE = "Construct the optimizer once before the loop; change its learning rate via param_groups"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            leaf = func.attr.value
        elif isinstance(func, cst.Name):
            leaf = func.value
        else:
            return
        # Optimizer classes are capitalised; factories say "optimizer" (configure_optimizers).
        if not (leaf[:1].isupper() or "optimizer" in leaf.lower()):
            return
        model = self.model
        loops = model.enclosing_loops(node)
        if not loops or model.kind_of(node) != OPTIMIZER or self._stateless(node):
            return
        facts = model.training
        ctx = iteration_context(model, node, lambda guard: _is_one_off(guard.test))
        loop = next((lp for lp in ctx.loops if facts.is_training_loop(lp)), None)
        if loop is None:
            return
        if self._fresh_in(_parameter_sources(node), loop, 0) or self._member_of_filled(node, loop):
            return  # a new model every iteration: a new run, not a reset
        if self._changes_trainable_set(loop, node):
            return  # gradual unfreezing: a new parameter set needs a new optimizer
        self.report(node)

    def _member_of_filled(self, call: cst.Call, loop: cst.CSTNode) -> bool:
        """`models.append(Member()); Adam(models[-1].parameters())`: the parameters come from an
        element of a container that this iteration filled, a new ensemble member or fold."""
        for source in _parameter_sources(call):
            parent = self.model.parent(source)
            if isinstance(parent, cst.Subscript) and parent.value is source \
                    and filled_before(self.model, loop, dotted(source) or "", call):
                return True
        return False

    def _changes_trainable_set(self, loop: cst.CSTNode, call: cst.Call) -> bool:
        """`p.requires_grad = True`, `p.requires_grad_()`, `model.unfreeze(...)` in the loop
        body before ``call``: the set of trained parameters changes this iteration."""
        model = self.model
        index = model.order[id(call)]
        for node in model.within(cst.Call, loop):
            if model.order[id(node)] >= index:
                break
            func = node.func
            # `fns[0](x)`: a call of a subscript or of a call has no name (its .value is a node)
            leaf = func.attr.value if isinstance(func, cst.Attribute) else \
                func.value if isinstance(func, cst.Name) else ""
            if leaf == "requires_grad_" or "freeze" in leaf.lower():
                return True
        for node in model.within(cst.Assign, loop):
            if model.order[id(node)] >= index:
                break
            if any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
                   for t in node.targets):
                return True
        return False

    def _stateless(self, call: cst.Call) -> bool:
        """Plain SGD without momentum keeps no state: rebuilding it resets nothing."""
        if self.model.qualified_name(call.func) != "torch.optim.SGD":
            return False
        momentum = keyword_arg(call, "momentum")
        if momentum is None:
            positional = [a for a in call.args if a.keyword is None]
            if len(positional) >= 3 or any(a.star for a in call.args):
                return False
            return True
        value = momentum.value
        return isinstance(value, (cst.Integer, cst.Float)) and float(value.value) == 0.0

    def _fresh_in(self, exprs: list[cst.CSTNode], loop: cst.CSTNode, depth: int) -> bool:
        """Whether a name the parameters come from is bound anew in ``loop``'s body."""
        model = self.model
        for expr in exprs:
            bindings = model.bindings_of(expr)
            for b in bindings or ():
                if b.kind not in (ASSIGN, FOR, WITH) or b.scope.kind == "comprehension":
                    continue
                if b.node is loop:
                    # the loop's own target: `for member in ensemble:`
                    if not _reads_parameters(b.value):
                        return True
                    continue
                if not model.is_inside(b.node, loop):
                    continue
                if b.value is None or not _reads_parameters(b.value) and not _is_container(b.value):
                    return True  # `model = Net()`: a new model this iteration
                if depth < 4 and self._fresh_in(_names_in(b.value), loop, depth + 1):
                    return True
        return False


def _parameter_sources(call: cst.Call) -> list[cst.CSTNode]:
    """Names and ``self.x`` chains the optimizer's parameters are read from."""
    if call_method(call) is not None and "optimizer" in call.func.attr.value.lower():
        # model.configure_optimizers(...): the receiver owns the parameters
        return _names_in(call.func.value)
    arg = keyword_arg(call, "params")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if not positional:
            return []
        arg = positional[0]
    return _names_in(arg.value)


def _names_in(expr: cst.CSTNode) -> list[cst.CSTNode]:
    """The Name roots and ``self.x`` chains read by a (small) expression."""
    out: list[cst.CSTNode] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, cst.Name):
            out.append(e)
            continue
        if isinstance(e, cst.Attribute):
            text = dotted(e)
            if text is not None and text.startswith("self.") and text.count(".") == 1:
                out.append(e)
                continue
            stack.append(e.value)
            continue
        if isinstance(e, cst.Arg):
            stack.append(e.value)  # not the keyword's name
        elif not isinstance(e, (cst.Lambda, cst.Param)):
            stack.extend(e.children)
    return out


def _reads_parameters(expr: cst.CSTNode | None) -> bool:
    stack = [expr] if expr is not None else []
    while stack:
        e = stack.pop()
        if isinstance(e, cst.Attribute) and e.attr.value in _PARAM_READERS:
            return True
        stack.extend(c for c in e.children if isinstance(c, cst.CSTNode))
    return False


def _is_container(expr: cst.CSTNode) -> bool:
    return isinstance(expr, (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.GeneratorExp))


def _is_one_off(test: cst.BaseExpression) -> bool:
    """`if epoch == k:`, `if optimizer is None:`, `if not opt:`, `if step % n == 0:`."""
    if is_rare_condition(test):
        return True
    stack: list[cst.CSTNode] = [test]
    while stack:
        e = stack.pop()
        if isinstance(e, cst.Comparison):
            if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.NotIn)) for t in e.comparisons):
                return True
        elif isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not):
            return True
        elif isinstance(e, cst.BooleanOperation):
            stack.extend((e.left, e.right))
    return False

