"""Which functions a call may run: ``f()`` of this file, and ``self.<method>()`` through the class
hierarchy, in this file and across the project's files.

A method call has one *target* when the class (or the nearest base class that
binds the name) defines it; a stub (``raise NotImplementedError``, ``pass``,
``...``), or a name no class binds, runs whatever the subclasses implement: the
targets are then every implementation, in this file (``ScopeModel.overrides``)
and, with ``model.project_facts``, in the project's other files
(:meth:`~lint_rules.analysis.cross_file.ProjectFacts.overrides`). A base class
defined in another file lends its method (:meth:`ProjectFacts.inherited_method`).
A target of another file is a :class:`ForeignMethod`: what that file's summary
says of it (its parameters and effects, see :mod:`lint_rules.analysis.summary`).

The answer is None when a target cannot be named: a method bound to a value, a
base class outside the project that may define it, a subclass search too wide.
Facts that hold for *every* target hold for the call
(:meth:`~lint_rules.analysis.summaries.Summaries.effects_at`,
:meth:`~lint_rules.analysis.summaries.Summaries.steps_optimizer`); a rule asks
those, never this list, so each question is answered once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import libcst as cst

from lint_rules.analysis.scopes import METHOD_DEF, METHOD_MISSING, METHOD_OTHER, METHOD_STUB, dotted

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import ScopeModel

# Base classes that define no method a trainer calls on itself: a name they lack is nowhere above.
PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol"})


@dataclass(frozen=True)
class ForeignMethod:
    """A method of a class of another project file, as its file's summary describes it."""

    path: str
    cls: str
    name: str
    entry: dict  # {"stub": bool, "params": [...], "effects": [[kind, target, looped, depth, conditional], ...]}


Target = Union[cst.FunctionDef, ForeignMethod]


class Dispatch:
    """Call targets of one file; get the shared one with ``model.fact(Dispatch)``."""

    def __init__(self, model: "ScopeModel") -> None:
        self.model = model
        self._methods: dict[tuple[int, str], tuple[Target, ...] | None] = {}
        self._attributes: frozenset[str] | None = None

    def targets(self, func: cst.CSTNode) -> tuple[Target, ...] | None:
        """Every function calling ``func`` may run (a Name, or ``self.<method>`` in a method); None
        when one of them cannot be named, or ``func`` is no call of this file's or the project's code
        that this module follows (an imported function is :class:`ProjectFacts`' to answer)."""
        model = self.model
        if type(func) is cst.Name:
            fn = model.local_function(func)
            return (fn,) if fn is not None else None
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            scope = model.scope_at(func)
            while scope is not None and scope.kind != "class":
                scope = scope.parent
            if scope is None:
                return None
            return self.method_targets(scope.node, func.attr.value)
        return None

    def method_targets(self, cls: cst.ClassDef, name: str) -> tuple[Target, ...] | None:
        """What ``self.<name>()`` may run in a method of ``cls`` (see the module docstring)."""
        key = (id(cls), name)
        if key not in self._methods:
            self._methods[key] = None  # a lookup that comes back to itself finds nothing
            self._methods[key] = self._find(cls, name)
        return self._methods[key]

    def _find(self, cls: cst.ClassDef, name: str) -> tuple[Target, ...] | None:
        model = self.model
        how, fn = model.method_binding(cls, name)
        if how == METHOD_DEF:
            return (fn,)
        if how == METHOD_OTHER:
            return None
        project = getattr(model, "project_facts", None)
        if how == METHOD_MISSING:
            if name in self._self_attributes():
                return None  # `self.net(x)`: an attribute set on the instance, no method
            outside = self._outside_bases(cls)
            if outside:
                if project is None:
                    return None  # a base class this file does not define may define it
                found = project.inherited_method(model, outside, name)
                if found is None:
                    return None  # bound to a value, or a base class outside the project
                if found != METHOD_MISSING:
                    if not found.entry["stub"]:
                        return (found,)
                    # a stub in a base class of another file: this class's subclasses implement it
        local = model.overrides(cls, name)
        if local is None:
            return None
        out: list[Target] = list(local)
        if project is not None and model.scope_at(cls) is model.module_scope:
            starts = [cls.name.value] + [sub.name.value for sub in model.file_subclasses(cls)
                                         if model.scope_at(sub) is model.module_scope]
            foreign = project.overrides(starts, name)
            if foreign is None:
                return None
            out.extend(foreign)
        return tuple(out) if out else None

    def _outside_bases(self, cls: cst.ClassDef) -> list[cst.CSTNode]:
        """The base classes, of ``cls`` and its base classes of this file, that this file does not
        define (an imported ``BaseTrainer``, ``nn.Module``), leaving out those that define nothing."""
        model = self.model
        out: list[cst.CSTNode] = []
        seen: set[int] = set()
        stack = [cls]
        while stack and len(seen) <= 16:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            local = model.file_bases(node)
            stack.extend(local)
            for arg in node.bases:
                if arg.keyword is not None:
                    continue
                value = arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value  # Generic[T]
                text = dotted(value)
                if text in PLAIN_BASES:
                    continue
                if isinstance(value, cst.Name) and any(b.name.value == value.value for b in local):
                    continue
                out.append(value)
        return out

    def _self_attributes(self) -> frozenset[str]:
        """The names this file assigns as ``self.<name> = ...``: instance attributes, not methods."""
        if self._attributes is None:
            names = set()
            for node in self.model.nodes(cst.Assign):
                for t in node.targets:
                    for target in (t.target.elements if isinstance(t.target, (cst.Tuple, cst.List)) else ()):
                        _self_name(target.value, names)
                    _self_name(t.target, names)
            for node in self.model.nodes(cst.AnnAssign) if cst.AnnAssign in self.model.by_type else ():
                _self_name(node.target, names)
            self._attributes = frozenset(names)
        return self._attributes


def _self_name(target: cst.CSTNode, names: set[str]) -> None:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        names.add(target.attr.value)
