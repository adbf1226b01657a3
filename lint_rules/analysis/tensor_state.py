"""What a module's methods do with a tensor attribute after construction: whether they move it to
another device where they read it, and whether they update it from its own value at run time.

Both questions decide what an unregistered tensor attribute costs. One that every use moves first
(``self.pe = self.pe.to(x.device)``, ``self.scale.to(logits.device)``) keeps working wherever the
module goes; one that a run-time method accumulates into (``self.counts[arm] += 1``,
``self.center = self.center * m + batch * (1 - m)``, ``self.total.add_(n)``) is state that the
module learns while it runs, and that ``state_dict()`` then silently leaves out.

``construction`` is a predicate over methods that says which ones only build the module (its
``__init__`` and the helpers only ``__init__`` calls): writes there fill the tensor, they do not
update it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import libcst as cst

from lint_rules.analysis.devices import MOVES, moves_device
from lint_rules.analysis.mutations import NOT_MUTATING
from lint_rules.analysis.scopes import ASSIGN

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# A tensor method that returns the tensor on another device (or on the device of another tensor).
_MOVING_METHODS = MOVES | {"type_as"}
# In-place tensor methods whose new value depends on the old one: an accumulation. A refill
# (``copy_``, ``zero_``, ``fill_``, ``normal_``) overwrites instead, as a noise or cache refresh does.
ACCUMULATING = frozenset({"add_", "sub_", "mul_", "div_", "addcmul_", "addcdiv_", "lerp_", "index_add_",
                          "scatter_add_", "addmm_", "addmv_", "addr_", "baddbmm_", "addbmm_"})


def _methods(classdef: cst.ClassDef) -> list[cst.FunctionDef]:
    body = classdef.body
    if not isinstance(body, cst.IndentedBlock):
        return []
    return [s for s in body.body if isinstance(s, cst.FunctionDef)]


def _self_name(method: cst.FunctionDef) -> str | None:
    params = method.params.params
    return params[0].name.value if params else None


def _is_self_attr(expr: cst.CSTNode, self_name: str, attr: str) -> bool:
    """``self.<attr>``, also through ``.data`` and subscripts (``self.<attr>[i]``, ``self.<attr>.data``)."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "data" \
                and isinstance(expr.value, cst.Attribute):
            expr = expr.value
        else:
            break
    return isinstance(expr, cst.Attribute) and expr.attr.value == attr \
        and isinstance(expr.value, cst.Name) and expr.value.value == self_name


def moved_where_read(model: "FileModel", classdef: cst.ClassDef, attr: str) -> bool:
    """Some method of ``classdef`` moves ``self.<attr>`` to a device where it reads it:
    ``self.<attr>.to(x.device)``, ``self.<attr>.cuda()``, ``self.<attr>.type_as(x)``. The module then
    follows its inputs whatever device the attribute was created on."""
    for method in _methods(classdef):
        self_name = _self_name(method)
        if self_name is None:
            continue
        for call in model.within(cst.Call, method):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in _MOVING_METHODS):
                continue
            if func.attr.value == "to" and not moves_device(call):
                continue  # .to(torch.float16): a cast, the device stays
            receiver = func.value
            # self.<attr>.view(*shape).to(x.device), self.<attr>[i].cuda(): a value made from it moves
            while isinstance(receiver, cst.Subscript) or isinstance(receiver, cst.Call) \
                    and isinstance(receiver.func, cst.Attribute):
                receiver = receiver.value if isinstance(receiver, cst.Subscript) else receiver.func.value
            if isinstance(receiver, cst.Attribute) and receiver.attr.value == attr \
                    and isinstance(receiver.value, cst.Name) and receiver.value.value == self_name:
                return True
    return False


def accumulated_at_run_time(model: "FileModel", classdef: cst.ClassDef, attr: str,
                            construction: Callable[[cst.FunctionDef], bool]) -> list[cst.CSTNode]:
    """The statements and calls in methods of ``classdef`` that are not ``construction`` and update
    ``self.<attr>`` from its own value, in document order: ``self.<attr> += n``,
    ``self.<attr>[i] -= r``, ``self.<attr>.add_(n)`` (an accumulating in-place method, see
    :data:`ACCUMULATING`), or ``self.<attr> = <arithmetic with self.<attr> as an operand>``
    (``self.<attr> * m + new * (1 - m)``). A plain overwrite (``self.<attr>[i] = v``,
    ``self.<attr>.copy_(v)``) or a move (``self.<attr> = self.<attr>.to(d)``) is not an update."""
    found: list[cst.CSTNode] = []
    for method in _methods(classdef):
        self_name = _self_name(method)
        if self_name is None or construction(method):
            continue
        for aug in model.within(cst.AugAssign, method):
            if _is_self_attr(aug.target, self_name, attr):
                found.append(aug)
        for call in model.within(cst.Call, method):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ACCUMULATING \
                    and _is_self_attr(func.value, self_name, attr):
                found.append(call)
        for assign in model.within(cst.Assign, method):
            if any(isinstance(t.target, cst.Attribute) and _is_self_attr(t.target, self_name, attr)
                   for t in assign.targets) \
                    and _arithmetic_of(assign.value, self_name, attr):
                found.append(assign)
    found.sort(key=lambda n: model.order.get(id(n), 0))
    return found


def written_at_run_time(model: "FileModel", classdef: cst.ClassDef, attr: str,
                        construction: Callable[[cst.FunctionDef], bool]) -> bool:
    """Methods of ``classdef`` that are not ``construction`` write into the tensor ``self.<attr>``
    holds: an update (:func:`accumulated_at_run_time`), an item store (``self.<attr>[i] = v``) or any
    in-place method (``self.<attr>.copy_(v)``): a memory bank or queue filled while the module runs."""
    if accumulated_at_run_time(model, classdef, attr, construction):
        return True
    for method in _methods(classdef):
        self_name = _self_name(method)
        if self_name is None or construction(method):
            continue
        for assign in model.within(cst.Assign, method):
            if any(isinstance(t.target, cst.Subscript) and _is_self_attr(t.target, self_name, attr)
                   for t in assign.targets):
                return True
        for call in model.within(cst.Call, method):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") \
                    and not func.attr.value.startswith("_") and func.attr.value not in NOT_MUTATING \
                    and _is_self_attr(func.value, self_name, attr):
                return True
    return False


def _arithmetic_of(expr: cst.CSTNode, self_name: str, attr: str) -> bool:
    """``expr`` is arithmetic (``+ - * /``) with ``self.<attr>`` as one of its operands."""
    if not isinstance(expr, cst.BinaryOperation):
        return False
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif _is_self_attr(node, self_name, attr) and not isinstance(node, cst.Subscript):
            return True
    return False


def differentiated_against(model: "FileModel", classdef: cst.ClassDef, attr: str) -> bool:
    """A method of ``classdef`` takes gradients with respect to ``self.<attr>`` itself
    (``torch.autograd.grad(loss, [self.<attr>])``): a dummy that requires grad so that a penalty can
    be computed from its gradient, and that no optimizer must ever update."""
    for method in _methods(classdef):
        self_name = _self_name(method)
        if self_name is None:
            continue
        for call in model.within(cst.Call, method):
            if model.qualified_name(call.func) != "torch.autograd.grad":
                continue
            inputs = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "inputs"),
                          None)
            positional = [a.value for a in call.args if a.keyword is None]
            if inputs is None and len(positional) > 1:
                inputs = positional[1]
            if inputs is not None and _mentions_self_attr(inputs, self_name, attr):
                return True
    return False


def _mentions_self_attr(expr: cst.CSTNode, self_name: str, attr: str) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if _is_self_attr(node, self_name, attr):
            return True
        stack.extend(node.children)
    return False


def created_if_none(model: "FileModel", node: cst.CSTNode, attr: str) -> bool:
    """``node`` runs only under ``if self.<attr> is None:`` (in that branch, not its ``else``): a lazy
    creation that happens once, not a reset that starts the state again."""
    child = node
    for parent in model.ancestors(node):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(parent, cst.If) and child is parent.body and _is_none_test(parent.test, attr):
            return True
        child = parent
    return False


def _is_none_test(test: cst.CSTNode, attr: str) -> bool:
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    return isinstance(target.operator, cst.Is) and isinstance(target.comparator, cst.Name) \
        and target.comparator.value == "None" and isinstance(test.left, cst.Attribute) \
        and test.left.attr.value == attr and isinstance(test.left.value, cst.Name)


def queued_at_run_time(model: "FileModel", classdef: cst.ClassDef, attr: str,
                       construction: Callable[[cst.FunctionDef], bool]) -> bool:
    """Methods of ``classdef`` that are not ``construction`` store items into ``self.<attr>`` at a
    position the module keeps itself and moves on at run time: ``self.<attr>[:, ptr:ptr + n] = keys``
    with ``ptr = int(self.<pointer>)``, or ``self.<attr>[self.<pointer>] = x``, where a run-time
    method assigns or writes ``self.<pointer>``. A memory queue: its contents outlive the step. An
    index handed in (``self.cache[:, start:start + n] = k`` with ``start`` a parameter) is not one."""
    runtime = [m for m in _methods(classdef) if _self_name(m) is not None and not construction(m)]
    pointers: set[str] = set()
    for method in runtime:
        self_name = _self_name(method)
        for assign in model.within(cst.Assign, method):
            for t in assign.targets:
                target = t.target
                if isinstance(target, cst.Subscript) and _is_self_attr(target, self_name, attr) \
                        and isinstance(target.value, cst.Attribute):
                    for element in target.slice:
                        pointers |= _self_attrs_read(model, element, self_name, method) - {attr}
    if not pointers:
        return False
    for method in runtime:
        self_name = _self_name(method)
        for node in [*model.within(cst.Assign, method), *model.within(cst.AugAssign, method)]:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                if any(_is_self_attr(target, self_name, p) for p in pointers):
                    return True
    return False


def _self_attrs_read(model: "FileModel", expr: cst.CSTNode, self_name: str, method: cst.FunctionDef,
                     _depth: int = 0) -> set[str]:
    """Names of the ``self.<name>`` attributes ``expr`` reads, also through local variables of
    ``method`` (``ptr = int(self.queue_ptr)``)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self_name:
            found.add(node.attr.value)
            continue
        if isinstance(node, cst.Name) and _depth < 3:
            for b in model.bindings_of(node) or ():
                if b.kind == ASSIGN and b.value is not None and model.enclosing_function(b.node) is method:
                    found |= _self_attrs_read(model, b.value, self_name, method, _depth + 1)
            continue
        stack.extend(node.children)
    return found


def read_at_run_time(model: "FileModel", classdef: cst.ClassDef, attr: str,
                     construction: Callable[[cst.FunctionDef], bool]) -> bool:
    """A method of ``classdef`` that is not ``construction`` reads ``self.<attr>`` (as a value, not
    only as the target it assigns): the tensor takes part in what the module computes once built."""
    for method in _methods(classdef):
        self_name = _self_name(method)
        if self_name is None or construction(method):
            continue
        targets = {id(t.target) for assign in model.within(cst.Assign, method) for t in assign.targets}
        stack: list[cst.CSTNode] = [method.body]
        while stack:  # attributes are not among the nodes the model collects: walk the body
            node = stack.pop()
            if isinstance(node, cst.Attribute) and id(node) not in targets and node.attr.value == attr \
                    and isinstance(node.value, cst.Name) and node.value.value == self_name:
                return True
            stack.extend(node.children)
    return False


# Calls that build a tensor from the data they are given: a number there makes a 0-dim tensor.
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})


def scalar_tensor(model: "FileModel", expr: cst.CSTNode | None) -> bool:
    """``expr`` builds a 0-dim tensor (``torch.tensor(0.5)``, ``torch.tensor(rate).float()``): one
    that mixes with tensors on any device without an error, so it is no device bug."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and model.qualified_name(expr.func) is None:
        expr = expr.func.value  # torch.tensor(x).float(), .to(dtype)
    if not (isinstance(expr, cst.Call) and model.qualified_name(expr.func) in _FROM_DATA and expr.args):
        return False
    data = expr.args[0].value
    return isinstance(data, (cst.Integer, cst.Float, cst.UnaryOperation)) or isinstance(data, cst.Name) \
        and not any(b.value is not None and isinstance(b.value, (cst.List, cst.Tuple, cst.ListComp))
                    for b in model.bindings_of(data) or ())


# Methods a module overrides to take part in its checkpoints in a way of its own.
_CHECKPOINT_METHODS = frozenset({"state_dict", "load_state_dict", "_load_from_state_dict", "_save_to_state_dict"})


def restores_own_state(classdef: cst.ClassDef) -> bool:
    """``classdef`` overrides how its checkpoint is saved or restored (``def load_state_dict(self,
    state_dict, ...)``): its state is meant to survive a checkpoint, and the class knows which
    attributes it keeps, so a name it sets itself is its own, whatever its base registers."""
    return any(m.name.value in _CHECKPOINT_METHODS for m in _methods(classdef))
