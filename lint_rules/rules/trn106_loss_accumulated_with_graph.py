from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import LOADER, LOSS
from lint_rules.analysis.model import ASSIGN, FOR, WITH, dotted
from lint_rules.analysis.training import BACKWARD
from lint_rules.rule import Invalid, Rule, Valid
from lint_rules.analysis.autograd_flow import binding_scope, value_names

_APPENDS = frozenset({"append", "extend", "insert"})
# Statements that run only sometimes: a reset inside one does not happen every iteration.
_CONDITIONAL = (cst.If, cst.IfExp, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler,
                cst.Match, cst.FunctionDef, cst.Lambda, cst.ClassDef)
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

    VALID = [
        Valid(
            """
            import torch
            total_loss = 0.0
            losses = []
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                total_loss += loss.item()
                losses.append(loss.detach())
            """
        ),
        Valid(
            """
            # one iteration's loss built from parts; the total is reset every step
            import torch
            import torch.nn.functional as F
            for x, y in loader:
                optimizer.zero_grad()
                out, aux = model(x)
                loss = F.cross_entropy(out, y)
                loss = loss + 0.4 * F.cross_entropy(aux, y)
                loss += reg_weight * model.l2()
                step_losses = []
                step_losses.append(loss)
                loss.backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # evaluation under no_grad holds no graph
            import torch
            criterion = torch.nn.CrossEntropyLoss()
            val_loss = 0.0
            with torch.no_grad():
                for x, y in val_loader:
                    val_loss += criterion(model(x), y)
            for x, y in val_loader:
                with torch.no_grad():
                    out = model(x)
                loss = criterion(out, y)
                val_loss += loss
            """
        ),
        Valid(
            """
            # the accumulated losses are backpropagated together: the graphs are needed
            import torch
            import torch.nn.functional as F
            for batch in loader:
                optimizer.zero_grad()
                losses = []
                total = 0
                for head in heads:
                    out = head(batch.x)
                    losses.append(F.mse_loss(out, batch.y))
                    total = total + F.l1_loss(out, batch.y)
                (torch.stack(losses).sum() + total).backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            # a loop inside forward, not across training iterations
            import torch
            import torch.nn.functional as F
            def multiscale_loss(preds, target):
                total = 0
                for p in preds:
                    total += F.l1_loss(p, target)
                return total
            """
        ),
        Valid(
            """
            # the output's loss replaced by a detached copy before the output is kept
            import torch
            def train_epoch(module, loader, opt):
                history = []
                for batch in loader:
                    opt.zero_grad()
                    out = module.training_step(batch)
                    out["loss"].backward()
                    opt.step()
                    out["loss"] = out["loss"].detach()
                    history.append(out)
                    stats = module.training_step(batch)
                    stats = {k: v.item() for k, v in stats.items()}
                    history.append(stats)
                return history
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            # the step's output dict kept for the epoch, loss and graph included
            import torch
            def train_epoch(module, loader, opt):
                history = []
                for batch in loader:
                    opt.zero_grad()
                    out = module.training_step(batch)
                    out["loss"].backward()
                    opt.step()
                    history.append(out)  # BUG
                return history
            """
        ),
        Invalid(
            """
            import torch
            criterion = torch.nn.CrossEntropyLoss()
            for epoch in range(epochs):
                running_loss = 0.0
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    running_loss += loss  # BUG
            """
        ),
        Invalid(
            """
            import torch.nn.functional as F
            history = []
            epoch_loss = 0
            for step, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.nll_loss(model(x), y)
                loss.backward()
                optimizer.step()
                history.append(loss)  # BUG
                epoch_loss = epoch_loss + loss * x.size(0)  # BUG
            """
        ),
        Invalid(
            """
            import torch
            class Trainer:
                def train_step(self, x, y):
                    self.optimizer.zero_grad()
                    loss = self.model(x, y)
                    loss.backward()
                    self.optimizer.step()
                    self.epoch_loss += loss  # BUG
                    self.stats["loss"] += loss  # BUG

                def fit(self, loader):
                    for x, y in loader:
                        self.train_step(x, y)
            """
        ),
        Invalid(
            """
            # an evaluation loop over a DataLoader without no_grad
            import torch
            from torch.utils.data import DataLoader
            val_loader = DataLoader(val_ds, batch_size=64)
            criterion = torch.nn.MSELoss()
            val_loss = 0.0
            for x, y in val_loader:
                val_loss += criterion(model(x), y)  # BUG
            """
        ),
    ]

    def __init__(self, model) -> None:
        super().__init__(model)
        self._backward_roots: set[tuple[int, str]] | None = None

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
        elif self.model.kind_of(arg) != LOSS and not self._holds_loss(arg, node):
            return
        self._check(node, receiver, arg)

    def _holds_loss(self, holder: cst.CSTNode, node: cst.CSTNode) -> bool:
        """``holder`` is a local container with ``holder[k].backward()`` (or ``holder.k``)
        earlier in the same function, and neither it nor that entry is rebound in between."""
        model = self.model
        if not isinstance(holder, cst.Name):
            return False
        fn = model.enclosing_function(node)
        here = model.order.get(id(node))
        bindings = model.bindings_of(holder) or ()
        if fn is None or here is None or not bindings:
            return False
        for ev in model.training.events:
            call = ev.node
            if ev.kind != BACKWARD or not isinstance(call.func, cst.Attribute) \
                    or call.func.attr.value != "backward":
                continue
            entry = call.func.value
            if not isinstance(entry, (cst.Subscript, cst.Attribute)) or not isinstance(entry.value, cst.Name) \
                    or entry.value.value != holder.value or model.enclosing_function(call) is not fn:
                continue
            start = model.order.get(id(call))
            if start is None or start >= here:
                continue
            if any(b.kind == ASSIGN and start < (model.order.get(id(b.node)) or -1) < here for b in bindings):
                continue  # the holder was rebuilt after backward()
            if not self._entry_replaced(entry, fn, start, here):
                return True
        return False

    def _entry_replaced(self, entry: cst.CSTNode, fn: cst.CSTNode, start: int, end: int) -> bool:
        model = self.model
        code = model.module.code_for_node(entry)
        for assign in model.nodes(cst.Assign):
            pos = model.order.get(id(assign))
            if pos is None or not start < pos < end or model.enclosing_function(assign) is not fn:
                continue
            if any(type(t.target) is type(entry) and model.module.code_for_node(t.target) == code
                   for t in assign.targets):
                return True
        return False

    # ------------------------------------------------------------------ checks
    def _check(self, node: cst.CSTNode, target: cst.CSTNode, value: cst.CSTNode) -> None:
        model = self.model
        if model.in_no_grad(node) or self._without_graph(value, 0):
            return
        holder = target.value if isinstance(target, cst.Subscript) else target
        if dotted(holder) is None:
            return
        if self._backpropagated(holder):
            return
        loops = model.enclosing_loops(node)
        if loops:
            if not self._iterates_steps_or_data(loops):
                return
            if self._reset_before(holder, node, loops[0]):
                return
            self.report(node)
            return
        # A per-step helper called from the training loop: attributes outlive the call.
        fn = model.enclosing_function(node)
        if not isinstance(fn, cst.FunctionDef) or not (dotted(holder) or "").startswith("self."):
            return
        if id(fn) not in model.training.per_iteration_step_functions():
            return
        if self._reset_before(holder, node, fn):
            return
        self.report(node)

    def _without_graph(self, expr: cst.CSTNode, depth: int) -> bool:
        """The loss was computed under no_grad (or from values that were): it holds no graph."""
        model = self.model
        if depth > 3:
            return False
        if isinstance(expr, cst.Name):
            bindings = model.bindings_of(expr)
            if not bindings:
                return False
            for b in bindings:
                if b.kind == FOR:
                    continue  # a batch from the data: no graph
                if b.kind != ASSIGN or b.value is None:
                    return False
                if not (model.in_no_grad(b.node) or self._without_graph(b.value, depth + 1)):
                    return False
            return True
        if isinstance(expr, cst.BinaryOperation):
            return self._without_graph(expr.left, depth + 1) and self._without_graph(expr.right, depth + 1)
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.Call) and model.kind_of(expr) == LOSS:
            # criterion(out, y): no graph when every tensor it reads has none
            args = [a.value for a in expr.args if a.keyword is None]
            return bool(args) and all(self._without_graph(a, depth + 1) for a in args)
        return False

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

    def _reset_before(self, holder: cst.CSTNode, node: cst.CSTNode, region: cst.CSTNode) -> bool:
        """True when ``holder`` is rebound inside ``region`` before ``node`` on every path."""
        model = self.model
        bindings = model.bindings_of(holder)
        if not bindings:
            return False
        here = model.order.get(id(node))
        text = dotted(holder)
        for b in bindings:
            if b.kind not in (ASSIGN, FOR, WITH):
                continue
            pos = model.order.get(id(b.node))
            if pos is None or here is None or pos >= here:
                continue
            if b.node is region or not model.is_inside(b.node, region):
                continue
            if b.value is not None and _mentions(b.value, text):
                continue  # `total = total + x` carries the old value over
            if _dominates(model, b.node, node, region):
                return True
        return False

    def _backpropagated(self, holder: cst.CSTNode) -> bool:
        """True when the accumulator feeds a ``backward()`` in the same scope."""
        if self._backward_roots is None:
            self._backward_roots = self._collect_backward_roots()
        root = holder
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        scope_id = id(binding_scope(self.model, root))
        if root is holder:
            return (scope_id, root.value) in self._backward_roots
        return (scope_id, dotted(holder)) in self._backward_roots

    def _collect_backward_roots(self) -> set[tuple[int, str]]:
        """Names a backward() call's tensor is computed from, followed through assignments."""
        model = self.model
        out: set[tuple[int, str]] = set()
        stack: list[tuple[cst.CSTNode, int]] = []
        for ev in model.training.events:
            if ev.kind != BACKWARD:
                continue
            call = ev.node
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward":
                stack.append((call.func.value, 0))
            for arg in call.args:
                stack.append((arg.value, 0))
        expanded: set[int] = set()
        while stack:
            expr, depth = stack.pop()
            for name in value_names(expr):
                scope_id = id(binding_scope(model, name))
                out.add((scope_id, name.value))
                parent = model.parent(name)
                if isinstance(parent, cst.Attribute) and parent.value is name:
                    out.add((scope_id, dotted(parent) or name.value))
                if depth >= 3:
                    continue
                for b in model.bindings_of(name) or ():
                    if b.kind == ASSIGN and b.value is not None and id(b.value) not in expanded:
                        expanded.add(id(b.value))
                        stack.append((b.value, depth + 1))
        return out


def _mentions(expr: cst.CSTNode, text: str | None) -> bool:
    if text is None:
        return False
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) == text:
            return True
        stack.extend(node.children)
    return False


def _dominates(model, first: cst.CSTNode, later: cst.CSTNode, region: cst.CSTNode) -> bool:
    """``first`` runs on every path to ``later`` within ``region`` (both inside it)."""
    for a in model.ancestors(first):
        if a is region:
            return True
        if isinstance(a, _CONDITIONAL) and not model.is_inside(later, a):
            return False
    return False
