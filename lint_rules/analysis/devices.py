"""Device placement of a module value: whether it was already moved (``.to``/``.cuda``/``.cpu``)
before a point of its function, whether it was built there (so its place is known: where its
class put it), and whether a move call casts the dtype.

A move of a module that is already where it goes changes nothing; a rule that flags a move
asks these questions to tell a move that changes the parameters from one that may be a no-op.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.kinds import MODULE, kind_of
from lint_rules.analysis.scopes import ASSIGN, CLASS, PARAM, dotted, keyword_arg

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

MOVES = frozenset({"to", "cuda", "cpu"})
# Methods that return the module they are called on: `Net().cuda().train()` is still moved.
_SAME_MODULE = frozenset({"train", "eval", "float", "double", "half", "bfloat16", "requires_grad_"})
# torch dtypes a `.to(...)` casts to (the names of `torch.<dtype>`).
_DTYPES = frozenset({"float", "float16", "float32", "float64", "half", "double", "bfloat16", "int8",
                     "uint8", "int16", "int32", "int64", "long", "int", "bool", "complex64", "complex128"})
_MAX_DEPTH = 4


def is_move(call: cst.CSTNode) -> bool:
    """``<x>.to(...)``, ``<x>.cuda(...)`` or ``<x>.cpu()``."""
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in MOVES


def casts_dtype(model: "FileModel", call: cst.Call) -> bool:
    """A ``.to(...)`` that names a torch dtype (``dtype=``, or ``torch.float16`` as an argument):
    it changes the parameters whatever device they are on."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"):
        return False
    if keyword_arg(call, "dtype") is not None:
        return True
    for arg in call.args:
        if arg.keyword is None:
            q = model.qualified_name(arg.value)
            if q is not None and q.startswith("torch.") and q[len("torch."):] in _DTYPES:
                return True
    return False


def moved_before(model: "FileModel", expr: cst.CSTNode, at: cst.CSTNode, _depth: int = 0) -> bool:
    """Whether the module value ``expr`` (read at ``at``) was moved to a device before ``at``, as
    far as its own function shows: ``Net().to(d)`` itself, a name bound to a moved value, or a
    ``name.to(d)``/``self.net.cuda()`` statement that runs earlier in the same function."""
    if _depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        if is_move(expr):
            return True
        func = expr.func
        return isinstance(func, cst.Attribute) and func.attr.value in _SAME_MODULE \
            and moved_before(model, func.value, at, _depth + 1)
    text = dotted(expr)
    if text is None:
        return False
    fn = model.enclosing_function(at)
    index = model.order.get(id(at))
    if index is None:
        return False
    # An earlier `name.to(d)` / `self.net.cuda()` statement in the same function.
    for call in model.owned(cst.Call, fn):
        if model.order[id(call)] >= index:
            break
        if is_move(call) and dotted(call.func.value) == text and not model.mutually_exclusive(call, at):
            return True
    bindings = model.reaching_bindings(expr, at) if isinstance(expr, cst.Name) else model.bindings_of(expr)
    for b in bindings or ():
        if b.kind != ASSIGN or b.value is None or model.enclosing_function(b.node) is not fn:
            continue
        order = model.order.get(id(b.node))
        if order is None or order >= index or model.is_inside(at, b.node):
            continue
        if moved_before(model, b.value, b.node, _depth + 1):
            return True
    return False


def built_here(model: "FileModel", expr: cst.CSTNode, at: cst.CSTNode, _depth: int = 0) -> bool:
    """Whether the module value ``expr`` (read at ``at``) is built in ``at``'s own function: a module
    class called there (``Net()``, ``nn.Sequential(...)``), directly or through a name bound to one
    on every path that reaches ``at``. A module handed in, or returned by a factory, may have been
    moved by whoever made it."""
    if _depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        if is_move(expr):
            return False
        if kind_of(model, expr) == MODULE:
            return True
        leaf = (dotted(expr.func) or "").rsplit(".", 1)[-1]
        return leaf[:1].isupper()  # a class (by Python's naming convention) called here
    if not isinstance(expr, cst.Name):
        return False
    fn = model.enclosing_function(at)
    bindings = model.reaching_bindings(expr, at) or []
    return bool(bindings) and all(
        b.kind == ASSIGN and b.value is not None and model.enclosing_function(b.node) is fn
        and built_here(model, b.value, b.node, _depth + 1) for b in bindings)


_ACCELERATORS = ("cuda", "mps", "xpu")
_MAX_PIN_DEPTH = 10
# Methods of a tensor that keep its device: `torch.arange(n, device="cuda").float()` is still on the GPU.
_KEEPS_DEVICE = frozenset({"float", "double", "half", "bfloat16", "long", "int", "bool", "view", "reshape",
                           "unsqueeze", "squeeze", "expand", "repeat", "t", "transpose", "permute", "flatten",
                           "contiguous", "clone", "detach", "requires_grad_", "fill_", "zero_", "normal_",
                           "uniform_", "mul", "add", "sub", "div", "neg", "abs", "exp", "log", "sqrt"})


def pinned_to_accelerator(model: "FileModel", expr: cst.CSTNode, _depth: int = 0) -> bool:
    """Whether the tensor value ``expr`` is put on an accelerator that the code picks itself, not one
    handed in: ``torch.zeros(n, device="cuda")``, ``t.cuda()``, ``t.to(torch.device("cuda" if
    torch.cuda.is_available() else "cpu"))``, directly or through a local name bound to such a device
    or tensor. A device taken from a parameter, an input or the module (``device=x.device``,
    ``.to(device)`` with ``device`` passed in) follows whoever chose it, and is not pinned."""
    if _depth > _MAX_PIN_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        device = keyword_arg(expr, "device")
        if device is not None and names_accelerator(model, device.value, _depth + 1):
            return True
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "cuda":
                return True
            if method == "to":
                target = device.value if device is not None else next(
                    (a.value for a in expr.args if a.keyword is None), None)
                if target is not None and names_accelerator(model, target, _depth + 1):
                    return True
            if method in _KEEPS_DEVICE or method == "to" and not moves_device(expr):
                return pinned_to_accelerator(model, func.value, _depth + 1)
        return False
    if isinstance(expr, cst.BinaryOperation):
        return pinned_to_accelerator(model, expr.left, _depth + 1) \
            or pinned_to_accelerator(model, expr.right, _depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return pinned_to_accelerator(model, expr.expression, _depth + 1)
    if isinstance(expr, cst.Subscript):
        return pinned_to_accelerator(model, expr.value, _depth + 1)
    if isinstance(expr, cst.Name):
        bindings = model.bindings_of(expr) or []
        return bool(bindings) and all(b.kind == ASSIGN and b.value is not None for b in bindings) \
            and any(pinned_to_accelerator(model, b.value, _depth + 1) for b in bindings)
    return False


def moves_device(call: cst.Call) -> bool:
    """A ``.to(...)`` that names a device (rather than only a dtype or ``non_blocking=``)."""
    if keyword_arg(call, "device") is not None:
        return True
    first = next((a.value for a in call.args if a.keyword is None), None)
    name = dotted(first) if isinstance(first, cst.Attribute) else None
    return first is not None and not (name is not None and name.startswith("torch.")
                                      and name[len("torch."):] in _DTYPES)


def names_accelerator(model: "FileModel", expr: cst.CSTNode, _depth: int = 0) -> bool:
    """Whether the device expression ``expr`` is an accelerator the code names itself: ``"cuda"``,
    ``"cuda:0"``, ``torch.device("cuda")``, ``"cuda" if torch.cuda.is_available() else "cpu"``, or a
    local name bound only to those."""
    if _depth > _MAX_PIN_DEPTH:
        return False
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.split(":", 1)[0] in _ACCELERATORS
    if isinstance(expr, cst.IfExp):
        # `"cuda" if torch.cuda.is_available() else "cpu"`: the accelerator wherever there is one
        return names_accelerator(model, expr.body, _depth + 1)
    if isinstance(expr, cst.Call):
        if model.qualified_name(expr.func) == "torch.device" and expr.args:
            return names_accelerator(model, expr.args[0].value, _depth + 1)
        return False
    if isinstance(expr, cst.Name):
        bindings = model.bindings_of(expr) or []
        if len(bindings) == 1 and bindings[0].kind == PARAM:
            passed = _passed_by_constructions(model, bindings[0])
            return bool(passed) and all(names_accelerator(model, arg, _depth + 1) for arg in passed)
        return bool(bindings) and all(b.kind == ASSIGN and b.value is not None
                                      and names_accelerator(model, b.value, _depth + 1) for b in bindings)
    return False


def _passed_by_constructions(model: "FileModel", binding) -> list[cst.CSTNode] | None:
    """What every construction of a class in this file passes for a parameter of its ``__init__``
    (``HighPass(w, device)`` for ``def __init__(self, w, device)``); None when the parameter is not
    one of an ``__init__``, the class is never built in this file, or a construction leaves it to
    its default or passes it through ``*args``/``**kwargs``: the device is then chosen elsewhere."""
    param = binding.node
    fn = binding.scope.node
    if not (isinstance(param, cst.Param) and isinstance(fn, cst.FunctionDef) and fn.name.value == "__init__"):
        return None
    positional = [*fn.params.posonly_params, *fn.params.params]
    index = next((i for i, p in enumerate(positional) if p is param), None)
    classdef = next((a for a in model.ancestors(fn) if isinstance(a, cst.ClassDef)), None)
    if classdef is None:
        return None
    name = param.name.value
    passed: list[cst.CSTNode] = []
    for call in model.nodes(cst.Call):
        if not isinstance(call.func, cst.Name) or call.func.value != classdef.name.value:
            continue
        bindings = model.bindings_of(call.func) or []
        if not (len(bindings) == 1 and bindings[0].kind == CLASS and bindings[0].value is classdef):
            continue
        if any(a.star for a in call.args):
            return None
        arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
        if arg is None and index is not None and index > 0:  # `self` is not passed
            plain = [a.value for a in call.args if a.keyword is None]
            arg = plain[index - 1] if len(plain) >= index else None
        if arg is None:
            return None
        passed.append(arg)
    return passed or None


# A module base whose trainer moves every instance to the accelerator it trains on.
_MOVED_BY_TRAINER = re.compile(r"(^|\.)LightningModule$")


def moved_by_trainer(model: "FileModel", classdef: cst.ClassDef, _depth: int = 0) -> bool:
    """Whether ``classdef`` derives, in its own file or through classes of other project files, from
    a ``LightningModule``: the Lightning ``Trainer`` moves the module to the accelerator it trains on,
    whoever builds it, so the project need not call ``.to()`` for the module to move; a plain tensor
    attribute then stays where it was made."""
    project = getattr(model, "project_facts", None)
    for arg in classdef.bases:
        base = arg.value
        text = model.qualified_name(base) or dotted(base)
        if text is not None and _MOVED_BY_TRAINER.search(text):
            return True
        bindings = model.bindings_of(base) if isinstance(base, cst.Name) else None
        if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
            if _depth < 8 and moved_by_trainer(model, bindings[0].value, _depth + 1):
                return True
            continue
        ancestors = project.ancestor_bases(model, base) if project is not None else None
        if ancestors and any(_MOVED_BY_TRAINER.search(b) for b in ancestors):
            return True
    return False
