"""LibCST's parser, without LibCST's per-node checks.

The parser builds each node by calling its class, and every LibCST node class is a frozen,
slotted dataclass: its ``__init__`` stores each field through ``object.__setattr__`` (the class
forbids plain assignment) and then calls ``CSTNode.__post_init__``, which validates the node. Both
are there for trees that code builds by hand; the parser's output is valid by construction, and
LibCST's own source says the check might better be skipped when parsing.

While one of our parses runs, each node class's ``__init__`` is therefore replaced by an equivalent
that stores the fields straight through the slots' descriptors and validates nothing (same
parameters, defaults and default factories, taken from the dataclass fields). A parse costs a
fifth less: torch/nn parses in 0.94 s instead of 1.17 s (``benchmarks/lint_speed.py``); of that,
skipping the validation alone saves a sixth, and storing directly 0.08 s more (0.99 -> 0.91 s of
CPU in one process).

The swap is counted across threads, and undone when the last parse ends, so nodes built at any
other time (a rule's fix, another library in the same process) are checked as usual. A class that
is not the plain frozen, slotted dataclass this expects keeps its own ``__init__`` and has only
its validation skipped (``__post_init__``); a LibCST without that hook is parsed as it always was.
"""

from __future__ import annotations

import dataclasses
import threading
import types

import libcst as cst

try:
    from libcst._nodes.base import CSTNode as _Node

    _VALIDATING = _Node.__dict__["__post_init__"]
except (ImportError, KeyError):  # a LibCST without the hook: parse as it always did
    _Node = None
    _VALIDATING = None

_lock = threading.Lock()
_active = 0
_swaps: list[tuple[type, object, object]] | None = None  # (class, its __init__, the direct one)
_MISSING = dataclasses.MISSING
_STAR_ARGS = 0x04 | 0x08  # inspect.CO_VARARGS | inspect.CO_VARKEYWORDS (inspect is slow to import)


def _trusted(self: object) -> None:
    """``__post_init__`` during a parse: the parser built the node, nothing to check."""


def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module(source)``, unvalidated; raises what it raises."""
    if _Node is None:
        return cst.parse_module(source)
    global _active, _swaps
    with _lock:
        _active += 1
        if _active == 1:
            if _swaps is None:
                _swaps = _direct_inits()
            _Node.__post_init__ = _trusted
            for cls, _, direct in _swaps:
                cls.__init__ = direct
    try:
        return cst.parse_module(source)
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for cls, own, _ in _swaps:
                    cls.__init__ = own
                _Node.__post_init__ = _VALIDATING


# ------------------------------------------------------------------ direct __init__s
_templates: dict[int, types.FunctionType] = {}


def _template(n: int) -> types.FunctionType:
    """``make(M, s0, f0, ..., s<n-1>, f<n-1>)`` returning an ``__init__(self, p0, ..., p<n-1>)`` that
    stores each ``p<i>`` with the setter ``s<i>``, calling the factory ``f<i>`` for a parameter left
    at the sentinel ``M``. One compile per arity; each class renames the parameters (see
    :func:`_direct_init`)."""
    if n not in _templates:
        cells = "".join(f", _tc_s{i}, _tc_f{i}" for i in range(n))
        params = "".join(f", p{i}" for i in range(n))
        body = "".join(f"\n        _tc_s{i}(self, p{i} if p{i} is not _tc_M else _tc_f{i}())" for i in range(n))
        source = (f"def make(_tc_M{cells}):\n"
                  f"    def __init__(self{params}):{body or chr(10) + '        pass'}\n"
                  f"    return __init__\n")
        namespace: dict = {}
        exec(compile(source, "<lint_rules.analysis.parsing>", "exec"), namespace)
        _templates[n] = namespace["make"]
    return _templates[n]


def _direct_init(cls: type) -> types.FunctionType | None:
    """An ``__init__`` for the frozen, slotted dataclass ``cls`` that takes what the dataclass's
    own takes and sets the slots directly, without ``__post_init__``; None for another shape."""
    if "__slots__" not in cls.__dict__ or "__init__" not in cls.__dict__ \
            or getattr(cls, "__post_init__", None) is not _VALIDATING:  # it would do more than check
        return None
    fields = dataclasses.fields(cls)
    own = cls.__dict__["__init__"].__code__
    names = tuple(f.name for f in fields)
    # The dataclass's own __init__ takes exactly these, in this order, all positional-or-keyword
    # (not so with init=False fields, keyword-only fields or InitVars).
    if own.co_varnames[1:own.co_argcount] != names or own.co_kwonlyargcount or own.co_flags & _STAR_ARGS:
        return None
    cells: list = [_MISSING]
    defaults: list = []
    for f in fields:
        setter = getattr(cls, f.name, None)
        if type(setter) is not types.MemberDescriptorType:
            return None
        if f.default is not _MISSING:
            defaults.append(f.default)
            factory = None
        elif f.default_factory is not _MISSING:
            defaults.append(_MISSING)
            factory = f.default_factory
        elif defaults:  # a required field after a defaulted one: not a dataclass __init__
            return None
        else:
            factory = None
        cells += [setter.__set__, factory]
    init = _template(len(fields))(*cells)
    init.__code__ = init.__code__.replace(co_varnames=("self", *names))
    init.__defaults__ = tuple(defaults) or None
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _direct_inits() -> list[tuple[type, object, object]]:
    """Every concrete node class with its own ``__init__`` and the direct replacement."""
    seen: dict[type, None] = {}
    stack = [_Node]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen[sub] = None
                stack.append(sub)
    out = []
    for cls in seen:
        try:
            direct = _direct_init(cls)
        except Exception:  # a LibCST whose classes are built otherwise: keep theirs
            direct = None
        if direct is not None:
            out.append((cls, cls.__dict__["__init__"], direct))
    return out
