"""How often a statement runs relative to the loops around it (TRN201-TRN203).

:func:`iteration_context` walks up from a node inside its function and reports the
loops in whose body it runs on every iteration (innermost first) and where the walk
stopped: at the function (or lambda/class) around it, at a guard the caller calls
occasional (``if step % 100 == 0:``), at a loop whose header (not body) holds the
node, or at the module. Rules decide from these facts whether that is "every
training step".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection

import libcst as cst

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import ScopeModel

_LOOPS = (cst.For, cst.While)


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
