"""Containers kept on a module class and what they hold (used by TRN401).

Whether an expression builds a plain Python container (a list, tuple, dict or set
literal or comprehension, ``[x] * n``, ``list(...)``), the elements it is built from,
what kind of element one is (a module or a parameter built right here), whether an
element is trainable (a module that holds state or depends on the mode, a parameter, a tensor
that requires grad; not a pooling or activation layer), and whether
a class annotates an attribute as a container of modules. Facts, not findings: built
once per file with ``model.fact(ContainerFacts)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.kinds import LEAF, kind_of
from lint_rules.analysis.modules import facts, is_torch_module_class_name
from lint_rules.analysis.names import PARAMETER, TENSOR_FACTORIES
from lint_rules.analysis.provenance import returns_of
from lint_rules.analysis.scopes import ASSIGN, CLASS, DEF, is_true, keyword_arg

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

CONTAINER_CALLS = frozenset({"builtins.list", "builtins.tuple", "builtins.dict"})
# Annotations of a container's elements: List[nn.Module], list[nn.Linear], Dict[str, nn.Module] ...
_GENERIC_CONTAINERS = frozenset({"typing.List", "builtins.list", "typing.Sequence", "typing.MutableSequence",
                                 "typing.Dict", "builtins.dict", "typing.Tuple", "builtins.tuple",
                                 "collections.abc.Sequence", "collections.abc.MutableSequence"})
# torch.nn layers that hold no parameters or buffers and compute the same in train and eval mode:
# a plain list of them loses nothing (Dropout and BatchNorm are not here: eval() must reach them).
STATELESS_LAYERS = frozenset(
    "Identity ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax Softmax2d LogSoftmax "
    "Softmin Softplus Softsign Hardtanh Hardswish Hardsigmoid Tanhshrink Softshrink Hardshrink Threshold "
    "LogSigmoid GLU MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d "
    "AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d "
    "LPPool2d Flatten Unflatten Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle "
    "ChannelShuffle ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
    "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d CircularPad1d "
    "CircularPad2d CircularPad3d CosineSimilarity PairwiseDistance Fold Unfold".split())
_LITERALS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
             cst.GeneratorExp)


class ContainerFacts:
    """Plain containers of one file and the elements they are built from."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._modules = facts(model)

    def is_container(self, expr: cst.CSTNode) -> bool:
        if isinstance(expr, _LITERALS):
            return True
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            return isinstance(expr.left, (cst.List, cst.ListComp)) or isinstance(expr.right, cst.List)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            return self.model.qualified_name(expr.func) in CONTAINER_CALLS
        return False

    def local_container(self, name: cst.Name) -> cst.CSTNode | None:
        bindings = self.model.bindings_of(name)
        if bindings and len(bindings) == 1 and bindings[0].kind == ASSIGN:
            return bindings[0].value
        return None

    def handed_elsewhere(self, item: cst.CSTNode) -> bool:
        """The element is a local name whose value is also handed, in the same function, to a call
        that puts it into another object (``set_module_by_path(net, path, wrapper)``,
        ``put_back(self.backbone, name, block)``): a call with it and at least one other name or
        attribute among its arguments, other than a container's own ``append``/``extend``/``insert``.
        The container is then an index of modules registered where they were put."""
        if not isinstance(item, cst.Name):
            return False
        bindings = self.model.bindings_of(item)
        if not bindings or len(bindings) != 1 or bindings[0].kind != ASSIGN:
            return False
        fn = self.model.enclosing_function(bindings[0].node)
        if fn is None:
            return False
        for call in self.model.within(cst.Call, fn):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("append", "extend", "insert"):
                continue
            values = [a.value for a in call.args]
            mine = [v for v in values if isinstance(v, cst.Name) and v.value == item.value
                    and self.model.bindings_of(v) == bindings]
            others = [v for v in values if isinstance(v, (cst.Name, cst.Attribute))
                      and not (isinstance(v, cst.Name) and v.value == item.value)]
            if mine and others:
                return True
        return False

    def returned_container(self, call: cst.CSTNode, index: int | None = None) -> cst.CSTNode | None:
        """The plain container that a function of this file builds in a local variable and returns,
        for ``call`` to it: ``layers = []; ...; return layers`` (``index``: the element of a returned
        tuple, ``return info, layers``). Every ``return`` must hand back the same container."""
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
            return None
        bindings = self.model.bindings_of(call.func)
        if not bindings or len(bindings) != 1 or bindings[0].kind != DEF \
                or not isinstance(bindings[0].value, cst.FunctionDef):
            return None
        found: cst.CSTNode | None = None
        for ret in returns_of(bindings[0].value):
            value = ret.value
            if index is not None:
                if not isinstance(value, cst.Tuple) or len(value.elements) <= index:
                    return None
                value = value.elements[index].value
            container = self.local_container(value) if isinstance(value, cst.Name) else None
            if container is None or not self.is_container(container) or found not in (None, container):
                return None
            found = container
        return found

    def elements(self, expr: cst.CSTNode) -> list[cst.CSTNode]:
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return [e.value for e in expr.elements if isinstance(e, cst.Element)]
        if isinstance(expr, cst.Dict):
            return [e.value for e in expr.elements if isinstance(e, cst.DictElement)]
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return [expr.elt]
        if isinstance(expr, cst.DictComp):
            return [expr.value]
        if isinstance(expr, cst.BinaryOperation):
            return self.elements(expr.left) + self.elements(expr.right)
        if isinstance(expr, cst.Call) and expr.args and isinstance(expr.func, cst.Name):
            if self.model.qualified_name(expr.func) in CONTAINER_CALLS:
                return self.elements(expr.args[0].value)
        return []

    def element_kind(self, expr: cst.CSTNode) -> str | None:
        """"module" or "parameter" for an element built right here, else None."""
        if isinstance(expr, cst.Name):
            value = self.local_container(expr)
            return self.element_kind(value) if isinstance(value, cst.Call) else None
        if not isinstance(expr, cst.Call):
            return None
        q = self.model.qualified_name(expr.func)
        if q is not None:
            return "parameter" if q == PARAMETER else "module" if is_torch_module_class_name(q) else None
        if isinstance(expr.func, cst.Name):
            bindings = self.model.bindings_of(expr.func)
            if bindings and len(bindings) == 1 and bindings[0].kind == CLASS \
                    and self._modules.is_module_class(bindings[0].value):
                return "module"
        return None

    def trainable(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """A module, a parameter, or a tensor that requires grad, built right here."""
        if depth > 3:
            return False
        if isinstance(expr, _LITERALS) or isinstance(expr, cst.BinaryOperation):
            return any(self.trainable(e, depth + 1) for e in self.elements(expr))
        if isinstance(expr, cst.Name):
            value = self.local_container(expr)
            return value is not None and isinstance(value, cst.Call) and self.trainable(value, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        q = self.model.qualified_name(expr.func)
        if q is not None:
            if q == PARAMETER:
                return True
            if q in TENSOR_FACTORIES:
                arg = keyword_arg(expr, "requires_grad")
                return arg is not None and is_true(arg.value)
            if is_torch_module_class_name(q):
                return not q.endswith("Loss") and q.rsplit(".", 1)[1] not in STATELESS_LAYERS
            if self._project_module_class(expr.func):
                return True
        if isinstance(expr.func, cst.Name):  # a class of this file
            bindings = self.model.bindings_of(expr.func)
            if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
                return self._modules.is_module_class(bindings[0].value) \
                    and not self.stateless_class(bindings[0].value)
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "requires_grad_":
            return kind_of(self.model, expr) == LEAF
        return False
    def stateless_class(self, classdef: cst.ClassDef, _depth: int = 0) -> bool:
        """A direct ``nn.Module`` subclass of this file that holds at least one ``torch.nn`` layer
        without parameters, buffers or a train/eval difference (:data:`STATELESS_LAYERS`), or such a
        class of this file, and otherwise only plain values: no parameter, tensor, buffer or other
        module. A list of them
        loses nothing (a moving average made of one ``AvgPool1d``)."""
        if _depth > 3 or not classdef.bases or any(
                self.model.qualified_name(a.value) != "torch.nn.Module" for a in classdef.bases):
            return False
        for call in self._modules.self_calls(classdef):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value.startswith(("register_", "add_module")):
                return False
            if isinstance(call.func, cst.Name) and call.func.value == "setattr":
                return False
        body = classdef.body
        if not isinstance(body, cst.IndentedBlock):
            return False
        methods = [m for m in body.body if isinstance(m, cst.FunctionDef)]
        # Attributes called like a layer (`self.inner(x)`): a module handed in, whatever its name says.
        called = {c.func.value.attr.value for m in methods for c in self.model.within(cst.Call, m)
                  if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Attribute)
                  and isinstance(c.func.value.value, cst.Name) and c.func.value.value.value == "self"} | \
                 {c.func.attr.value for m in methods for c in self.model.within(cst.Call, m)
                  if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name)
                  and c.func.value.value == "self"}
        layers = 0
        for method in methods:
            for assign in self.model.within(cst.Assign, method):
                attrs = [t.target.attr.value for t in assign.targets if isinstance(t.target, cst.Attribute)]
                if not attrs:
                    continue
                if isinstance(assign.value, (cst.Name, cst.Attribute)) and any(a in called for a in attrs):
                    return False
                if not self._stateless_value(assign.value, _depth):
                    return False
                layers += isinstance(assign.value, cst.Call)
        return layers > 0  # made of such layers; an empty class is a stand-in, not known to be one

    def _stateless_value(self, value: cst.CSTNode, depth: int) -> bool:
        """A value that holds no state of a module: a literal, a name, arithmetic of them, or a
        stateless ``torch.nn`` layer (or class of this file) built here. Any other call may build one."""
        if isinstance(value, (cst.Name, cst.Attribute, cst.BaseNumber, cst.BaseString, cst.Comparison,
                              cst.BooleanOperation, cst.UnaryOperation, cst.BinaryOperation)):
            return kind_of(self.model, value) is None
        if isinstance(value, (cst.Tuple, cst.List)):
            return all(self._stateless_value(e, depth) for e in self.elements(value))
        if not isinstance(value, cst.Call):
            return False
        q = self.model.qualified_name(value.func)
        if q is not None and is_torch_module_class_name(q):
            return q.rsplit(".", 1)[1] in STATELESS_LAYERS
        if q in ("builtins.int", "builtins.float", "builtins.bool", "builtins.str", "builtins.len"):
            return True
        if isinstance(value.func, cst.Name):
            bindings = self.model.bindings_of(value.func)
            if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
                return self.stateless_class(bindings[0].value, depth + 1)
        return False

    def declared_modules(self, cls: cst.ClassDef, attr: str) -> bool:
        """The class annotates the attribute as a container of modules:
        ``self.branches: Optional[List[nn.Module]] = None``."""
        for b in self._modules.attr_bindings(cls, attr):
            if not isinstance(b.node, cst.AnnAssign):
                continue
            stack: list[cst.CSTNode] = [b.node.annotation.annotation]
            while stack:
                node = stack.pop()
                if isinstance(node, cst.Subscript) and self.model.qualified_name(node.value) in _GENERIC_CONTAINERS:
                    if any(isinstance(el.slice, cst.Index) and self._names_module_class(el.slice.value)
                           for el in node.slice):
                        return True
                stack.extend(node.children)
        return False

    def _names_module_class(self, expr: cst.CSTNode) -> bool:
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        q = self.model.qualified_name(expr)
        if q is not None:
            return (is_torch_module_class_name(q) and not q.endswith("Loss")) or self._project_module_class(expr)
        bindings = self.model.bindings_of(expr) if isinstance(expr, cst.Name) else None
        return bool(bindings) and len(bindings) == 1 and bindings[0].kind == CLASS \
            and self._modules.is_module_class(bindings[0].value)

    def _project_module_class(self, func: cst.CSTNode) -> bool:
        """A class imported from another file of the project that is an ``nn.Module`` there."""
        project = getattr(self.model, "project_facts", None)
        return project is not None and project.is_module_class(self.model, func) is True
