"""Losses and the autograd graph they hold (used by TRN106).

Whether a value holds no graph (computed under no_grad, or from values that were),
which names feed a ``backward()`` (followed through assignments), whether a local
container holds an entry that ``backward()`` was called on, and whether a name is
rebound on every path before a statement. Facts, not findings: built once per file
with ``model.fact(LossGraphs)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.autograd_flow import binding_scope, value_names
from lint_rules.analysis.kinds import LOSS
from lint_rules.analysis.scopes import ASSIGN, FOR, WITH, dotted
from lint_rules.analysis.training import BACKWARD

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# Statements that run only sometimes: a rebinding inside one does not happen every iteration.
_CONDITIONAL = (cst.If, cst.IfExp, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler,
                cst.Match, cst.FunctionDef, cst.Lambda, cst.ClassDef)


class LossGraphs:
    """Graph facts of one file's losses and accumulators."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._backward_roots: set[tuple[int, str]] | None = None

    def holds_no_graph(self, expr: cst.CSTNode, depth: int = 0) -> bool:
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
                if not (model.in_no_grad(b.node) or self.holds_no_graph(b.value, depth + 1)):
                    return False
            return True
        if isinstance(expr, cst.BinaryOperation):
            return self.holds_no_graph(expr.left, depth + 1) and self.holds_no_graph(expr.right, depth + 1)
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.Call) and model.kind_of(expr) == LOSS:
            # criterion(out, y): no graph when every tensor it reads has none
            args = [a.value for a in expr.args if a.keyword is None]
            return bool(args) and all(self.holds_no_graph(a, depth + 1) for a in args)
        return False

    def feeds_backward(self, holder: cst.CSTNode) -> bool:
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

    def rebound_before(self, holder: cst.CSTNode, node: cst.CSTNode, region: cst.CSTNode) -> bool:
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

    def holds_backpropagated_entry(self, holder: cst.CSTNode, node: cst.CSTNode) -> bool:
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
        for ev in model.training.function_events(fn):
            call = ev.node
            if ev.kind != BACKWARD or not isinstance(call.func, cst.Attribute) \
                    or call.func.attr.value != "backward":
                continue
            entry = call.func.value
            if not isinstance(entry, (cst.Subscript, cst.Attribute)) or not isinstance(entry.value, cst.Name) \
                    or entry.value.value != holder.value:
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
        for assign in model.owned(cst.Assign, fn):
            pos = model.order.get(id(assign))
            if pos is None or not start < pos < end:
                continue
            if any(type(t.target) is type(entry) and model.module.code_for_node(t.target) == code
                   for t in assign.targets):
                return True
        return False


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
