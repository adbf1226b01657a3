"""In-place writes and reads inside a piece of code, in statement order: the walks over a block that a
rule would otherwise keep for itself (TRN104's hook body, TRN108's update statement).

``in_place_writes(body, names)``: the statements and calls that write, in place, a tensor one of
``names`` holds (``g[mask] = 0``, ``g *= 2``, ``g.mul_(2)``, ``g.data.clamp_(...)``), until the name is
rebound (``g = g.clone()``: later writes hit a new tensor). Nested functions and lambdas are their own
scopes and are not entered. ``reads_attribute(node, attr)``: ``node`` reads some ``x.<attr>``.
"""

from __future__ import annotations

import libcst as cst

# Trailing-underscore methods that change a flag, not the tensor's values.
NOT_MUTATING = frozenset({"requires_grad_", "retain_grad_"})


def root_name(expr: cst.CSTNode) -> str | None:
    """``g``, ``g[0]``, ``g.data``, ``grad_input[0]`` -> the name whose tensor they are."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr = expr.value
        else:
            return None


def in_place_writes(body: cst.CSTNode, names: set[str]) -> list[cst.CSTNode]:
    """In-place writes to a tensor one of ``names`` holds, in statement order, until it is rebound."""
    finder = _Writes(set(names))
    body.visit(finder)
    return finder.found


class _Writes(cst.CSTVisitor):
    def __init__(self, live: set[str]) -> None:
        super().__init__()
        self.live = live
        self.found: list[cst.CSTNode] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # nested functions have their own parameters

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Subscript) and root_name(t.target) in self.live:
                self.found.append(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                self.live.discard(t.target.value)  # rebound: later writes hit a new tensor

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if root_name(node.target) in self.live:
            self.found.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method.endswith("_") and not method.startswith("_") and method not in NOT_MUTATING \
                    and root_name(func.value) in self.live:
                self.found.append(node)


def reads_attribute(node: cst.CSTNode, attr: str) -> bool:
    """``node`` reads some ``x.<attr>`` (``reads_attribute(stmt, "grad")``: a hand-written update)."""
    finder = _Reads(attr)
    node.visit(finder)
    return finder.found


class _Reads(cst.CSTVisitor):
    def __init__(self, attr: str) -> None:
        super().__init__()
        self.attr = attr
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.found = self.found or node.attr.value == self.attr
        return not self.found


_FILLING_METHODS = frozenset({"append", "insert", "extend", "add", "setdefault"})


def filled_before(model, region: cst.CSTNode, text: str, before: cst.CSTNode) -> bool:
    """The container spelled ``text`` (``models``, ``self.members``) gets a new element in ``region``
    ahead of ``before``: ``models.append(Net())``, ``models.insert(0, m)``, ``models[k] = Net()``. An
    ensemble member or a fold's model built this way is new in each iteration."""
    from lint_rules.analysis.scopes import dotted

    index = model.order[id(before)]
    for call in model.within(cst.Call, region):
        if model.order[id(call)] >= index:
            break
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _FILLING_METHODS and dotted(func.value) == text:
            return True
    for assign in model.within(cst.Assign, region):
        if model.order[id(assign)] >= index:
            break
        if any(isinstance(t.target, cst.Subscript) and dotted(t.target.value) == text for t in assign.targets):
            return True
    return False
