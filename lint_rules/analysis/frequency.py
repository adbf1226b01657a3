"""How often a statement runs relative to the loops around it (TRN201-TRN203).

:func:`iteration_context` walks up from a node inside its function and reports the
loops in whose body it runs on every iteration (innermost first) and where the walk
stopped: at the function (or lambda/class) around it, at a guard the caller calls
occasional (``if step % 100 == 0:``), at a loop whose header (not body) holds the
node, or at the module. Rules decide from these facts whether that is "every
training step". :func:`walks_elements` says whether a loop runs once per element of a
tensor or per parameter of a model (``for row in logits``, ``for p in model.parameters()``),
rather than over a handful of named values (a dict of metrics), batches or time steps.
:func:`compounds_each_iteration` says whether ``x = f(x)`` in a loop body feeds each
iteration's result into the next one (nothing else in the loop rebinds ``x``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection

import libcst as cst

from lint_rules.analysis.kinds import LEAF, LOSS, PARAMETER, TENSOR
from lint_rules.analysis.scopes import ASSIGN, dotted

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel
    from lint_rules.analysis.scopes import ScopeModel

_LOOPS = (cst.For, cst.While)
# Wrappers that iterate what they are given, element by element.
_ELEMENTWISE_WRAPPERS = frozenset({"builtins.zip", "builtins.enumerate", "builtins.reversed",
                                   "builtins.list", "builtins.tuple", "builtins.sorted"})
_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
_SIZE_METHODS = frozenset({"size", "numel"})
_TENSORISH = (TENSOR, LOSS, LEAF, PARAMETER)


@dataclass(frozen=True)
class IterationContext:
    loops: tuple[cst.CSTNode, ...]  # loops that run the node every iteration, innermost first
    stop: cst.CSTNode | None  # where the walk ended: a def, an occasional guard, a loop header, None: module


def iteration_context(model: "ScopeModel", node: cst.CSTNode,
                      occasional: Callable[[cst.CSTNode], bool],
                      branches: tuple[type, ...] = (cst.If,),
                      stop_at: tuple[type, ...] = (cst.FunctionDef, cst.Lambda, cst.ClassDef),
                      walk_through: Collection[int] = ()) -> IterationContext:
    """``occasional(guard)`` says whether the body of an ``if``/``x if c else y`` runs now
    and then; ``walk_through`` holds ids of functions that run where they are defined
    (``opt.step(closure)``): the walk continues out of them."""
    loops: list[cst.CSTNode] = []
    child = node
    for anc in model.ancestors(node):
        if isinstance(anc, stop_at):
            if id(anc) in walk_through:
                child = anc
                continue
            return IterationContext(tuple(loops), anc)
        if isinstance(anc, branches) and child is anc.body and occasional(anc):
            return IterationContext(tuple(loops), anc)
        if isinstance(anc, _LOOPS):
            if not model.in_loop_body(child, anc):
                return IterationContext(tuple(loops), anc)
            loops.append(anc)
        child = anc
    return IterationContext(tuple(loops), None)


def walks_elements(model: "FileModel", loop: cst.CSTNode, _depth: int = 0) -> bool:
    """Whether ``loop`` runs once per element of a tensor or per parameter of a model:
    ``for row in logits``, ``zip(preds, labels)``, ``enumerate(t)``, ``range(len(t))``,
    ``range(t.size(0))``, ``range(t.shape[0])``, ``model.parameters()``, or a name bound to a
    comprehension or list over one of these. Loops over a dict of named metrics, a data loader,
    time steps or an opaque list are not: their length is small or their work is not per element."""
    if not isinstance(loop, cst.For):
        return False
    return _elementwise(model, loop.iter, _depth)


def _elementwise(model: "FileModel", expr: cst.CSTNode, depth: int) -> bool:
    if depth > 3:
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _PARAMETER_METHODS:
            return True
        q = model.qualified_name(func)
        if q in _ELEMENTWISE_WRAPPERS:
            return any(_elementwise(model, a.value, depth + 1) for a in expr.args if a.keyword is None)
        if q == "builtins.range" and expr.args:
            return _tensor_length(model, expr.args[-1 if len(expr.args) < 3 else 1].value)
        return model.kind_of(expr) in _TENSORISH
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return _elementwise(model, expr.for_in.iter, depth + 1)
    if isinstance(expr, cst.Name):
        if model.kind_of(expr) in _TENSORISH:
            return True
        bindings = model.bindings_of(expr)
        return bool(bindings) and all(b.kind == ASSIGN and b.value is not None
                                      and _elementwise(model, b.value, depth + 1) for b in bindings)
    return model.kind_of(expr) in _TENSORISH


def _tensor_length(model: "FileModel", expr: cst.CSTNode) -> bool:
    """``len(t)``, ``t.size(0)``, ``t.numel()``, ``t.shape[0]`` of a tensor ``t``."""
    if isinstance(expr, cst.Call):
        if model.qualified_name(expr.func) == "builtins.len" and len(expr.args) == 1:
            return model.kind_of(expr.args[0].value) in _TENSORISH
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SIZE_METHODS:
            return model.kind_of(expr.func.value) in _TENSORISH
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) \
            and expr.value.attr.value == "shape":
        return model.kind_of(expr.value.value) in _TENSORISH
    return False


def compounds_each_iteration(model: "FileModel", assign: cst.Assign, source: cst.CSTNode) -> bool:
    """``x = f(x)`` (``source`` is the ``x`` read) in the body of a loop, on every iteration (no
    ``if``/``try`` between), and nothing else in that loop rebinds ``x`` (``x = build()`` first
    starts every iteration afresh): each iteration applies ``f`` to the last one's result."""
    if len(assign.targets) != 1:
        return False
    name = dotted(source)
    if name is None or dotted(assign.targets[0].target) != name:
        return False
    child: cst.CSTNode = assign
    for anc in model.ancestors(assign):
        if isinstance(anc, (cst.If, cst.IfExp, cst.Try, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, _LOOPS):
            if not model.in_loop_body(child, anc):
                return False
            bindings = model.bindings_of(source) or []
            return not any(b.node is not assign and model.is_inside(b.node, anc) for b in bindings)
        child = anc
    return False
