"""Small facts shared by the autograd rules TRN106-TRN109: module-class tests,
the names a value is computed from, the scope a name is bound in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from lint_rules.analysis.modules import is_torch_module_class_name
from lint_rules.analysis.scopes import CLASS

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel, Scope

_LITERALS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.Integer, cst.Float,
             cst.Imaginary)
_OWN_SCOPES = (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)
_EXPRESSION_PARTS = (cst.BaseExpression, cst.Element, cst.DictElement, cst.StarredDictElement,
                     cst.SubscriptElement, cst.BaseSlice)


def value_names(expr: cst.CSTNode) -> Iterator[cst.Name]:
    """Names whose values ``expr`` reads: not called functions (``f`` in ``f(x)``), attribute
    names, keywords, or names inside lambdas and comprehensions. For small expressions."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute):
                stack.append(node.func.value)  # `x.sum()` reads x
            stack.extend(a.value for a in node.args)
        elif isinstance(node, _LITERALS + _OWN_SCOPES):
            continue
        else:
            stack.extend(c for c in node.children if isinstance(c, _EXPRESSION_PARTS))


def binding_scope(model: "FileModel", name: cst.Name) -> "Scope":
    """The scope whose binding ``name`` refers to (the module scope when unbound)."""
    bindings = model.lookup(name.value, model.scope_at(name))
    return bindings[0].scope if bindings else model.module_scope


def is_torch_module_class(qualname: str) -> bool:
    """A canonical name of a module base class: ``torch.nn.Module``, the ``torch.nn``
    layers (not ``nn.Parameter``), and the framework bases that subclass it
    (``LightningModule``, ``PreTrainedModel``). The same answer as
    :meth:`ModuleFacts.is_module_class` gives for a known base."""
    return is_torch_module_class_name(qualname)


def class_has_base(model: "FileModel", classdef: cst.ClassDef, accept: Callable[[str], bool],
                   depth: int = 0) -> bool:
    """A base of ``classdef``, or of a base class defined in the same file, has a canonical
    name that ``accept`` takes (``is_torch_module_class``, ``names.is_optimizer_class``)."""
    for base in classdef.bases:
        q = model.qualified_name(base.value)
        if q is not None:
            if accept(q):
                return True
            continue
        if isinstance(base.value, cst.Name) and depth < 6:
            bindings = model.bindings_of(base.value)
            if bindings and len(bindings) == 1 and bindings[0].kind == CLASS \
                    and class_has_base(model, bindings[0].value, accept, depth + 1):
                return True
    return False


def enclosing_class(model: "FileModel", node: cst.CSTNode) -> cst.ClassDef | None:
    for anc in model.ancestors(node):
        if isinstance(anc, cst.ClassDef):
            return anc
    return None
