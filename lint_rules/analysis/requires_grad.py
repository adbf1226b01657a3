"""Whether a leaf tensor (a parameter, a tensor made with ``requires_grad=True``) still requires
grad: its kind says it was made as one, this says whether the file turns that off.

``nn.Parameter(t, requires_grad=False)`` never requires grad; ``requires_grad=flag`` may not;
a tensor, a module or a parameter whose ``requires_grad`` is set to anything but ``True``
somewhere in the file (``w.requires_grad_(False)``, ``p.requires_grad = False`` in a loop over
the module's parameters, ``teacher.requires_grad_(False)``), the parameters of a deep copy (an
EMA or teacher model, frozen by whoever made it), and a loop over parameters that reads
``p.requires_grad`` may not either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis import names as N
from lint_rules.analysis.modules import mentions_name
from lint_rules.analysis.scopes import ASSIGN, FOR, call_method, dotted, is_true, keyword_arg

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

CERTAIN, NEVER, MAYBE = True, False, None
_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
_COPIES = frozenset({"deepcopy", "copy"})
# nn.Parameter(data=None, requires_grad=True)
_REQUIRES_GRAD_POSITION = 1


def still_requires_grad(model: "FileModel", leaf: cst.CSTNode, at: cst.CSTNode) -> bool | None:
    """For ``leaf`` (a Name or ``self.x``) whose kind is a leaf or a parameter, read at ``at``:
    True when nothing in the file turns its ``requires_grad`` off, False when it was made with
    ``requires_grad=False``, None when it may be off (see the module docstring)."""
    text = dotted(leaf)
    if text is None:
        return MAYBE
    switched = model.fact(_switched_off)
    bindings = model.reaching_bindings(leaf, at) if isinstance(leaf, cst.Name) else model.bindings_of(leaf)
    bindings = bindings or []
    # inside a loop over parameters, its loop variable is the one bound by that loop (whose
    # module is what may be frozen: a loop variable's name is reused by every such loop)
    loops = [b for b in bindings if b.kind == FOR and model.is_inside(at, b.node)]
    if not loops and text in switched:
        return MAYBE
    verdict: bool | None = CERTAIN
    for b in loops or bindings:
        if b.kind == ASSIGN and isinstance(b.value, cst.Call) and model.qualified_name(b.value.func) == N.PARAMETER:
            flag = _parameter_flag(b.value)
            if flag is None:
                continue
            if _is_false(flag):
                return NEVER
            if not is_true(flag):
                verdict = MAYBE
        elif b.kind == FOR and b.value is not None and call_method(b.value) in _PARAMETER_METHODS:
            owner = b.value.func.value
            if dotted(owner) in switched or _is_copy(model, owner, b.node) or _reads_requires_grad(model, b.node):
                verdict = MAYBE
    return verdict


def _parameter_flag(call: cst.Call) -> cst.BaseExpression | None:
    arg = keyword_arg(call, "requires_grad")
    if arg is not None:
        return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[_REQUIRES_GRAD_POSITION].value if len(positional) > _REQUIRES_GRAD_POSITION else None


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def frozen(model: "FileModel", module: cst.CSTNode) -> bool:
    """The file freezes the module ``module`` names (``model``, ``self.net``): it calls
    ``module.requires_grad_(False)`` or sets ``requires_grad = False`` on every parameter in a loop
    over ``module.parameters()``/``named_parameters()``. Its forward then records no graph of its
    own (an inference script's ``for k, v in model.named_parameters(): v.requires_grad = False``)."""
    text = dotted(module)
    return text is not None and text in model.fact(_frozen_modules)


def _frozen_modules(model: "FileModel") -> set[str]:
    """A fact of the file: the dotted names of the modules it freezes (see :func:`frozen`)."""
    found: set[str] = set()
    thawed: set[str] = set()  # a part unfrozen again (a fine-tuned head): that module still records
    for call in model.nodes(cst.Call):
        if call_method(call) == "requires_grad_":
            target = call.func.value
            owner = _loop_owner(model, target)
            text = owner if owner is not None else dotted(target)
            if text is not None:
                (found if call.args and _is_false(call.args[0].value) else thawed).add(text)
    for assign in model.nodes(cst.Assign):
        for t in assign.targets:
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad":
                owner = _loop_owner(model, t.target.value)
                if owner is not None:
                    (found if _is_false(assign.value) else thawed).add(owner)
    return {f for f in found if not any(t == f or t.startswith(f + ".") for t in thawed)}


def _loop_owner(model: "FileModel", target: cst.CSTNode) -> str | None:
    """For the loop variable ``p`` of ``for p in net.parameters()`` (or ``for _, p in
    net.named_parameters()``), the dotted name of ``net``."""
    if not isinstance(target, cst.Name):
        return None
    for b in model.bindings_of(target) or ():
        # the loop around the target: a loop variable's name is reused by every such loop
        if b.kind == FOR and call_method(b.value) in _PARAMETER_METHODS and model.is_inside(target, b.node):
            return dotted(b.value.func.value)
    return None


def _switched_off(model: "FileModel") -> set[str]:
    """A fact of the file (``model.fact(_switched_off)``, built once): The dotted names whose ``requires_grad`` the file sets to anything but a literal True, and
    the modules whose parameters a loop sets it on (``for p in net.parameters(): p.requires_grad = False``)."""
    found: set[str] = set()
    targets: list[cst.CSTNode] = []
    for call in model.nodes(cst.Call):
        if call_method(call) == "requires_grad_" and not (call.args and is_true(call.args[0].value)):
            targets.append(call.func.value)
    for assign in model.nodes(cst.Assign):
        if is_true(assign.value):
            continue
        for t in assign.targets:
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad":
                targets.append(t.target.value)
    for target in targets:
        text = dotted(target)
        if text is None:
            continue
        found.add(text)
        if isinstance(target, cst.Name):
            # a loop variable over some module's parameters: that module is (partly) frozen
            for b in model.bindings_of(target) or ():
                if b.kind == FOR and call_method(b.value) in _PARAMETER_METHODS:
                    owner = dotted(b.value.func.value)
                    if owner is not None:
                        found.add(owner)
    return found


def _is_copy(model: "FileModel", owner: cst.CSTNode, at: cst.CSTNode) -> bool:
    """``owner`` is bound to ``copy.deepcopy(...)``: an EMA or teacher copy, frozen by its maker."""
    bindings = model.reaching_bindings(owner, at) if isinstance(owner, cst.Name) else model.bindings_of(owner)
    for b in bindings or ():
        if b.kind == ASSIGN and isinstance(b.value, cst.Call):
            q = model.qualified_name(b.value.func) or dotted(b.value.func) or ""
            if q.rsplit(".", 1)[-1] in _COPIES:
                return True
    return False


def _reads_requires_grad(model: "FileModel", loop: cst.CSTNode) -> bool:
    """The loop over parameters reads ``.requires_grad``: it handles frozen ones on purpose."""
    return mentions_name(loop, "requires_grad")
