"""Grad mode: whether autograd records at a point of the file, answered once for every rule.

Grad is disabled at a node when it runs inside ``with torch.no_grad()`` (or
``inference_mode()``, ``set_grad_enabled(False)``), under such a decorator, under a
decorator or context manager of the project that enters one (``@no_grad_eval`` of this
file, ``@inference`` imported from the project's ``utils``), after
``stack.enter_context(torch.no_grad())`` in an enclosing ``with ExitStack() as stack:``,
or when every call of its function runs with grad disabled. The nearest context that
names a mode wins (``enable_grad()`` inside ``no_grad()`` records again).

Get it with ``model.fact(GradMode)``; ``FileModel.in_no_grad(node)`` is the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis import names as N
from lint_rules.analysis.scopes import is_false, is_true

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel
    from lint_rules.analysis.scopes import ScopeModel

MAX_DEPTH = 3  # decorators and callers followed, at most


class GradMode:
    """Grad-mode facts of one file (a fact: ``model.fact(GradMode)``)."""

    def __init__(self, model: "ScopeModel") -> None:
        self.model = model
        self._disables: dict[int, bool] = {}
        self._set_at: dict[int, int] | None = None

    # ------------------------------------------------------------ expressions
    def of_expr(self, expr: cst.CSTNode) -> bool | None:
        """False for a torch no-grad context or decorator, True for ``enable_grad``, else None."""
        call = expr if isinstance(expr, cst.Call) else None
        target = call.func if call is not None else expr
        if isinstance(target, cst.IfExp):
            # (torch.inference_mode if new_torch else torch.no_grad)(): either way grad is off
            body, orelse = (self.of_expr(b if call is None else call.with_changes(func=b))
                            for b in (target.body, target.orelse))
            return body if body == orelse else None
        q = self.model.qualified_name(target)
        if q in N.NO_GRAD_CONTEXTS:
            if q == "torch.inference_mode" and call is not None and call.args and is_false(call.args[0].value):
                return True
            return False
        if q == "torch.enable_grad":
            return True
        if q == N.SET_GRAD_ENABLED and call is not None and call.args:
            value = call.args[0].value
            if is_false(value):
                return False
            if is_true(value):
                return True
        return None

    def of_with(self, node: cst.With) -> bool | None:
        """The mode a ``with`` statement's torch context sets, if one of its items is one."""
        for item in node.items:
            mode = self.of_expr(item.item)
            if mode is not None:
                return mode
        return None

    def disables(self, expr: cst.CSTNode, _depth: int = 0) -> bool:
        """Whether a decorator or context manager turns grad off: a torch no-grad context (called
        or not), a function of this file whose body enters one (``@no_grad_eval`` wrapping
        ``torch.no_grad``), or such a function imported from another file of the project."""
        if self.of_expr(expr) is False:
            return True
        target = expr.func if isinstance(expr, cst.Call) else expr
        if _depth >= MAX_DEPTH or not isinstance(target, (cst.Name, cst.Attribute)):
            return False
        model = self.model
        fn = model.local_function(target)
        if fn is None:
            project = getattr(model, "project_facts", None)
            return project is not None and project.disables_grad(model, target)
        key = id(fn)
        found = self._disables.get(key)
        if found is None:
            found = self._disables[key] = enters_no_grad(model, fn, self)
        return found

    # ------------------------------------------------------- set_grad_enabled
    def managed(self, node: cst.CSTNode) -> bool:
        """Inside ``with torch.set_grad_enabled(<anything>):`` in its own function: the author decides
        the mode there (``set_grad_enabled(phase == "train")``), so no rule second-guesses it."""
        for a in self.model.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(a, cst.With) and any(
                    isinstance(item.item, cst.Call)
                    and self.model.qualified_name(item.item.func) == N.SET_GRAD_ENABLED for item in a.items):
                return True
        return False

    def set_before(self, node: cst.CSTNode) -> bool:
        """A ``torch.set_grad_enabled(<not True>)`` or ``torch.no_grad().__enter__()`` statement runs
        before ``node``, earlier in its function or at module level: the global grad mode was switched
        off (or handed to a flag)."""
        model = self.model
        first = self._set_at
        if first is None:  # the first such statement of each function (id(None): module level)
            first = self._set_at = {}
            for call in model.nodes(cst.Call):
                if not isinstance(model.parent(call), cst.Expr):
                    continue
                # torch.no_grad().__enter__(): the block entered by hand and never left
                entered = isinstance(call.func, cst.Attribute) and call.func.attr.value == "__enter__" \
                    and self.of_expr(call.func.value) is False
                if entered or call.args and not is_true(call.args[0].value) \
                        and model.qualified_name(call.func) == N.SET_GRAD_ENABLED:
                    first.setdefault(id(model.enclosing_function(call)), model.order[id(call)])
        index = model.order[id(node)]
        fn = model.enclosing_function(node)
        return first.get(id(None), index) < index or (fn is not None and first.get(id(fn), index) < index)

    # ----------------------------------------------------------------- points
    def lexically_disabled(self, node: cst.CSTNode) -> bool:
        """Inside a torch no-grad block or decorator of the function that holds ``node``."""
        for a in self.model.ancestors(node):
            if isinstance(a, cst.With):
                mode = self.of_with(a)
                if mode is not None:
                    return not mode
            elif isinstance(a, cst.FunctionDef):
                for d in a.decorators:
                    mode = self.of_expr(d.decorator)
                    if mode is not None:
                        return not mode
                return False
            elif isinstance(a, cst.Lambda):
                return False
        return False

    def disabled_at(self, node: cst.CSTNode, _depth: int = 0) -> bool:
        """Whether grad is disabled where ``node`` runs (see the module docstring)."""
        model = self.model
        for a in model.ancestors(node):
            if isinstance(a, cst.With):
                mode = self.of_with(a)
                if mode is not None:
                    return not mode
                if any(self.disables(item.item) for item in a.items) or self._exit_stack_disables(a, node):
                    return True
            elif isinstance(a, cst.FunctionDef):
                for d in a.decorators:
                    mode = self.of_expr(d.decorator)
                    if mode is not None:
                        return not mode
                if any(self.disables(d.decorator) for d in a.decorators):
                    return True
                if _depth < MAX_DEPTH:
                    sites = model.call_sites(a)
                    if sites and all(not model.is_inside(site, a) and self.disabled_at(site, _depth + 1)
                                     for site in sites):
                        return True
                return False
            elif isinstance(a, (cst.Lambda, cst.ClassDef)):
                return False
        return False

    def _exit_stack_disables(self, with_node: cst.With, node: cst.CSTNode) -> bool:
        model = self.model
        stacks = {item.asname.name.value for item in with_node.items
                  if item.asname is not None and isinstance(item.asname.name, cst.Name)
                  and isinstance(item.item, cst.Call)
                  and model.qualified_name(item.item.func) == "contextlib.ExitStack"}
        if not stacks:
            return False
        index = model.order.get(id(node), len(model.ordered))
        for call in model.within(cst.Call, with_node.body):
            func = call.func
            if model.order[id(call)] >= index:
                break
            if isinstance(func, cst.Attribute) and func.attr.value == "enter_context" \
                    and isinstance(func.value, cst.Name) and func.value.value in stacks and call.args \
                    and self.disables(call.args[0].value):
                return True
        return False


def enters_no_grad(model: "ScopeModel", fn: cst.FunctionDef, modes: GradMode | None = None) -> bool:
    """Whether ``fn``'s body (its nested functions included) enters a torch no-grad context: a
    ``with`` of one, a call of one, or a no-grad decorator on ``fn`` or a function inside it."""
    modes = modes or GradMode(model)
    for d in fn.decorators:
        if modes.of_expr(d.decorator) is False:
            return True
    for node in model.within(cst.Call, fn):
        q = model.qualified_name(node.func)
        if q in N.NO_GRAD_CONTEXTS or (isinstance(node.func, cst.Call)
                                       and model.qualified_name(node.func.func) in N.NO_GRAD_CONTEXTS):
            return True
    for w in model.within(cst.With, fn):
        if modes.of_with(w) is False:
            return True
    for inner in model.within(cst.FunctionDef, fn):
        if inner is not fn and any(modes.of_expr(d.decorator) is False for d in inner.decorators):
            return True
    return False


# Decorators that never set the grad mode (builtins, functools, abc, typing); torch's own are known.
_MODE_NEUTRAL_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "abstractmethod", "overload",
                                      "override", "wraps", "cache", "lru_cache", "cached_property",
                                      "contextmanager", "dataclass", "setter", "getter", "deleter"})


def left_to_callers(model: "FileModel", node: cst.CSTNode) -> bool:
    """Whether grad mode where ``node`` runs (grad on, as far as this file shows) is its callers' to
    decide: inside a function that nothing in the file calls and that runs no backward or step of
    its own (a library helper that a caller may run under ``no_grad``; ``__init__`` excluded:
    constructors run with grad on), or under a decorator from another package that may set it."""
    fn = model.enclosing_function(node)
    while isinstance(fn, cst.Lambda):
        fn = model.enclosing_function(fn)
    if not isinstance(fn, cst.FunctionDef):
        return False
    modes = model.fact(GradMode)
    for d in fn.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        q = model.qualified_name(target) or ""
        leaf = (q or (target.attr.value if isinstance(target, cst.Attribute) else
                      target.value if isinstance(target, cst.Name) else "")).rsplit(".", 1)[-1]
        if leaf in _MODE_NEUTRAL_DECORATORS or q.startswith("torch.") or model.local_function(target) is not None:
            continue
        if not modes.disables(d.decorator):
            return True  # a decorator of another package: it may enter no_grad
    if fn.name.value == "__init__" or model.call_sites(fn):
        return False
    return not model.training.function_events(fn)
