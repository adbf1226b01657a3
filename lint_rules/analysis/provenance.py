"""Where a tensor comes from, as far as loss functions care: softmax, log-softmax,
sigmoid probabilities or raw logits, through variables, reaching assignments and a
model's last layer; and which calls are loss sinks (criteria and ``F.*`` losses).
Shared by TRN501-TRN504.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.scopes import ASSIGN, CLASS, FOR, PARAM, dotted, keyword_arg

if TYPE_CHECKING:
    from lint_rules.analysis.model import Binding, FileModel

# What a value is, as far as the loss functions care.
SOFTMAX = "softmax"
LOG_SOFTMAX = "log_softmax"
SIGMOID = "sigmoid"
LOGITS = "logits"  # the raw output of a linear layer

_FUNCTIONS = {
    "torch.softmax": SOFTMAX,
    "torch.nn.functional.softmax": SOFTMAX,
    "torch.special.softmax": SOFTMAX,
    "torch.log_softmax": LOG_SOFTMAX,
    "torch.nn.functional.log_softmax": LOG_SOFTMAX,
    "torch.special.log_softmax": LOG_SOFTMAX,
    "torch.sigmoid": SIGMOID,
    "torch.nn.functional.sigmoid": SIGMOID,
    "torch.special.expit": SIGMOID,
    "torch.nn.functional.linear": LOGITS,
}
_TENSOR_METHODS = {"softmax": SOFTMAX, "log_softmax": LOG_SOFTMAX, "sigmoid": SIGMOID}
# exp() undoes a log: exp(log_softmax(x)) is softmax(x).
_EXP = frozenset({"torch.exp", "torch.special.exp"})
# Layers whose output is one of the above, by canonical class name.
_LAYERS = {
    "torch.nn.Softmax": SOFTMAX,
    "torch.nn.LogSoftmax": LOG_SOFTMAX,
    "torch.nn.Sigmoid": SIGMOID,
    "torch.nn.Linear": LOGITS,
    "torch.nn.LazyLinear": LOGITS,
    "torch.nn.Bilinear": LOGITS,
}
# Tensor methods that keep what a value is (shape, dtype and device changes).
_PRESERVING = frozenset(
    "view reshape squeeze unsqueeze flatten contiguous permute transpose float double half "
    "to cuda cpu clone view_as reshape_as t type_as".split())
# Module methods that return the module itself.
_MODULE_SELF_METHODS = frozenset("to cuda cpu float double half train eval requires_grad_".split())
# Wrappers whose output is the wrapped module's output.
_MODULE_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
                              "torch.compile"})
_CONDITIONAL = (cst.If, cst.IfExp, cst.Try, cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)


class Provenance:
    """Where a tensor comes from: softmax, log_softmax, sigmoid, a linear layer, or unknown.

    Follows variables to their reaching assignment, tensor methods that keep the
    value (``.view``, ``[mask]``), and module calls to the module's construction:
    ``nn.Sequential(..., nn.Softmax(1))``, ``nn.Linear``, or a class in this file
    whose ``forward`` returns one of these. Unknown is ``None``.
    """

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._forward_cache: dict[tuple[int, int | None], str | None] = {}

    # ------------------------------------------------------------- values
    def of_value(self, expr: cst.CSTNode, at: cst.CSTNode, depth: int = 0) -> str | None:
        """What ``expr`` (evaluated at the statement holding ``at``) holds."""
        if depth > 12:
            return None
        if isinstance(expr, cst.Subscript):
            return self.of_value(expr.value, at, depth + 1)
        if isinstance(expr, cst.Name):
            return self._agree(reaching_bindings(self.model, expr, at),
                               lambda b: self._value_binding(b, depth))
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        q = self.model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if q is not None:
            if q in _FUNCTIONS:
                return _FUNCTIONS[q]
            if q in _EXP and expr.args and not expr.args[0].star:
                return _exp_of(self.of_value(expr.args[0].value, at, depth + 1))
            if q in _MODULE_WRAPPERS or q.startswith("torch.nn.") and q.rsplit(".", 1)[1][:1].isupper():
                return None  # constructs a module; it is not a value
        if isinstance(func, cst.Attribute) and q is None:
            method = func.attr.value
            if method in _TENSOR_METHODS:
                return _TENSOR_METHODS[method]
            if method == "exp" and not expr.args:
                return _exp_of(self.of_value(func.value, at, depth + 1))
            if method in _PRESERVING:
                return self.of_value(func.value, at, depth + 1)
        if q is not None and q.startswith("torch.nn.parallel.data_parallel") and expr.args:
            return self.of_module(expr.args[0].value, at, depth + 1)  # data_parallel(module, inputs)
        return self.of_module(func, at, depth + 1)

    def _value_binding(self, b: "Binding", depth: int) -> str | None:
        if b.element is not None:  # `validity, label = disc(img)`
            return self.of_element(*b.element, b.node, depth + 1)
        if b.kind == ASSIGN and b.value is not None:
            return self.of_value(b.value, b.node, depth + 1)
        if b.kind == FOR and isinstance(getattr(b.node, "target", None), cst.Name) and b.value is not None:
            # `for row in torch.softmax(scores, -1)`: the rows of a tensor are what it is
            return self.of_value(b.value, b.node, depth + 1)
        return None

    def of_element(self, expr: cst.CSTNode, index: int, at: cst.CSTNode, depth: int = 0) -> str | None:
        """What element ``index`` of ``expr``'s value holds, where ``expr`` calls a module of a class
        in this file whose ``forward`` returns a tuple (``return validity, self.aux(h)``)."""
        if depth > 12 or not isinstance(expr, cst.Call):
            return None
        classdef = self.module_class(expr.func, at, depth + 1)
        return self._class_output(classdef, depth, index) if classdef is not None else None

    # ------------------------------------------------------------ modules
    def module_class(self, expr: cst.CSTNode, at: cst.CSTNode, depth: int = 0) -> cst.ClassDef | None:
        """The class of this file that the module ``expr`` is an instance of, when every binding
        that can reach ``at`` agrees; followed as :meth:`of_module` follows them."""
        if depth > 12:
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            q = self.model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if q is not None:
                if q in _MODULE_WRAPPERS and expr.args and not expr.args[0].star:
                    return self.module_class(expr.args[0].value, at, depth + 1)
                return None
            if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_SELF_METHODS:
                return self.module_class(func.value, at, depth + 1)
            return self.local_class(func)
        found = [self._module_class_binding(b, depth) for b in self._module_bindings(expr, at) or ()]
        if not found or found[0] is None or any(c is not found[0] for c in found):
            return None
        return found[0]

    def _module_class_binding(self, b: "Binding", depth: int) -> cst.ClassDef | None:
        if b.kind == ASSIGN and b.value is not None:
            return self.module_class(b.value, b.node, depth + 1)
        if b.kind == PARAM and isinstance(b.node, cst.Param) and b.node.annotation is not None:
            return self.local_class(b.node.annotation.annotation)
        return None

    def of_module(self, expr: cst.CSTNode, at: cst.CSTNode, depth: int = 0) -> str | None:
        """What calling the module ``expr`` returns."""
        if depth > 12:
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            q = self.model.qualified_name(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
            if q is not None:
                if q in _LAYERS:
                    return _LAYERS[q]
                if q == "torch.nn.Sequential":
                    layers = [a for a in expr.args if a.keyword is None]
                    if layers and not layers[-1].star:
                        return self.of_module(layers[-1].value, at, depth + 1)
                    return None
                if q in _MODULE_WRAPPERS and expr.args and not expr.args[0].star:
                    return self.of_module(expr.args[0].value, at, depth + 1)
                return None
            if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_SELF_METHODS:
                return self.of_module(func.value, at, depth + 1)  # Net().to(device)
            classdef = self.local_class(func)
            return self._class_output(classdef, depth) if classdef is not None else None
        return self._agree(self._module_bindings(expr, at), lambda b: self._module_binding(b, depth))

    def _module_bindings(self, expr: cst.CSTNode, at: cst.CSTNode) -> list["Binding"] | None:
        """Where the module named ``expr`` (a variable reaching ``at``, or ``self.<attr>``) was bound."""
        if isinstance(expr, cst.Name):
            return reaching_bindings(self.model, expr, at)
        if isinstance(expr, cst.Attribute) and (text := dotted(expr)) is not None and text.startswith("self."):
            return self.model.bindings_of(expr)
        return None

    def _module_binding(self, b: "Binding", depth: int) -> str | None:
        if b.kind == ASSIGN and b.value is not None:
            return self.of_module(b.value, b.node, depth + 1)
        if b.kind == PARAM and isinstance(b.node, cst.Param) and b.node.annotation is not None:
            # `def train(model: MyNet)`: the annotation names the class.
            classdef = self.local_class(b.node.annotation.annotation)
            return self._class_output(classdef, depth) if classdef is not None else None
        if b.kind == PARAM and isinstance(b.node, cst.Param) and isinstance(b.value, cst.FunctionDef):
            # train(net, ...): what every caller in the project passes, when they agree
            from lint_rules.analysis.kinds import ARG_OUTPUT, agreed_at_call_sites

            project = getattr(self.model, "project_facts", None)
            return agreed_at_call_sites(self.model, b.node, b.value,
                                        lambda arg: self.of_module(arg, arg, depth + 1),
                                        project.call_facts(ARG_OUTPUT) if project is not None else None)
        return None

    def local_class(self, expr: cst.CSTNode) -> cst.ClassDef | None:
        if not isinstance(expr, cst.Name):
            return None
        bindings = self.model.bindings_of(expr)
        if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
            return bindings[0].value
        return None

    def _class_output(self, classdef: cst.ClassDef, depth: int, index: int | None = None) -> str | None:
        """What calling a module of ``classdef`` returns; with ``index``, what element ``index`` of the
        tuple its ``forward`` returns holds (None unless every return is a tuple literal that long)."""
        key = (id(classdef), index)
        if key in self._forward_cache:
            return self._forward_cache[key]
        self._forward_cache[key] = None  # cycle guard
        result = None
        forward = _method(classdef, "forward")
        if forward is not None:
            returned = [(_returned(r.value, index), r) for r in returns_of(forward)]
            if returned and all(value is not None for value, _ in returned):
                result = self._agree(returned, lambda vr: self.of_value(vr[0], vr[1], depth + 1))
        else:
            for base in classdef.bases:
                parent = self.local_class(base.value)
                if parent is not None:
                    result = self._class_output(parent, depth + 1, index)
                    break
        self._forward_cache[key] = result
        return result

    @staticmethod
    def _agree(items, judge) -> str | None:
        if not items:
            return None
        verdicts = {judge(item) for item in items}
        return verdicts.pop() if len(verdicts) == 1 else None


def _returned(value: cst.BaseExpression | None, index: int | None) -> cst.BaseExpression | None:
    """What a ``return`` hands back: its whole value, or element ``index`` of the tuple literal it
    returns (None when it returns nothing, or no tuple that long, or one with a starred element)."""
    if value is None or index is None:
        return value
    if isinstance(value, cst.Tuple) and len(value.elements) > index \
            and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return value.elements[index].value
    return None


def _exp_of(kind: str | None) -> str | None:
    return SOFTMAX if kind == LOG_SOFTMAX else None


def reaching_bindings(model: "FileModel", name: cst.Name, at: cst.CSTNode) -> list["Binding"] | None:
    """The bindings of ``name`` that can reach the statement holding ``at``.

    Within one scope: the last binding before ``at`` in document order, and the
    ones before it while that one may not run (inside an ``if``, a loop or a
    ``try`` that does not hold ``at``). From an enclosing scope: all of them.
    """
    bindings = model.bindings_of(name)
    if not bindings:
        return None
    here = model.scope_at(name)
    if any(b.scope is not here for b in bindings):
        return bindings
    at_index = model.order.get(id(at))
    if at_index is None:
        at_index = _order_of_enclosing(model, at)
    indexed = []
    for b in bindings:
        if b.kind == PARAM:
            indexed.append((-1, b))
            continue
        i = model.order.get(id(b.node))
        if i is None:
            return bindings  # a binding statement the model does not order
        indexed.append((i, b))
    before = sorted((ib for ib in indexed if ib[0] < at_index), key=lambda ib: ib[0])
    if not before:
        return bindings  # bound later, e.g. in the previous loop iteration
    reaching = []
    for _, b in reversed(before):
        reaching.append(b)
        if b.kind == PARAM or not _conditional_for(model, b.node, at):
            break
    return reaching


def _order_of_enclosing(model: "FileModel", node: cst.CSTNode) -> int:
    for a in model.ancestors(node):
        i = model.order.get(id(a))
        if i is not None:
            return i
    return len(model.ordered)


def _conditional_for(model: "FileModel", stmt: cst.CSTNode, at: cst.CSTNode) -> bool:
    """True when ``stmt`` sits in a branch, loop or ``try`` that does not also hold ``at``."""
    at_ancestors = {id(a) for a in model.ancestors(at)}
    for a in model.ancestors(stmt):
        if isinstance(a, _SCOPES):
            return False
        if id(a) in at_ancestors:
            return False
        if isinstance(a, _CONDITIONAL):
            return True
    return False


def _method(classdef: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for stmt in classdef.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def returns_of(fn: cst.FunctionDef) -> list[cst.Return]:
    """The ``return`` statements of ``fn`` itself (not of nested functions or classes)."""
    found: list[cst.Return] = []
    stack: list[cst.CSTNode] = [fn.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            found.extend(s for s in node.body if isinstance(s, cst.Return))
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            stack.extend(node.body)
        elif isinstance(node, cst.BaseCompoundStatement):
            for field in ("body", "orelse", "finalbody", "handlers"):
                child = getattr(node, field, None)
                if isinstance(child, (list, tuple)):
                    stack.extend(child)
                elif child is not None:
                    stack.append(child)
        elif isinstance(node, (cst.Else, cst.ExceptHandler, cst.Finally)):
            stack.append(node.body)
    return found


class LossSinks:
    """Calls of a loss, as ``F.<function>(input, ...)`` or ``<criterion>(input, ...)``.

    ``functions`` and ``classes`` are canonical names. Criterion variables are found
    once per file from their construction, so checking a call is a set lookup.
    """

    def __init__(self, model: "FileModel", functions: frozenset[str], classes: frozenset[str]) -> None:
        self.model = model
        self.functions = functions
        self.classes = classes
        self.provenance = Provenance(model)
        self._function_leaves = frozenset(q.rsplit(".", 1)[1] for q in functions)
        self._class_leaves = frozenset(q.rsplit(".", 1)[1] for q in classes)
        self._criteria: tuple[set[str], set[str]] | None = None
        self._helpers: dict[int, tuple[str, int] | None] = {}
        self._helper_names: set[str] | None = None

    def input_kind(self, call: cst.Call) -> str | None:
        """What the loss's input is (SOFTMAX, LOG_SOFTMAX, SIGMOID, LOGITS) when ``call`` is one of the losses."""
        value = self.input_of(call)
        return self.provenance.of_value(value, call) if value is not None else None

    def input_of(self, call: cst.Call) -> cst.BaseExpression | None:
        """The loss's input (its first argument) when ``call`` is one of the losses; for a call of a
        loss helper of this file (``self.auxiliary_loss(pred, y)`` where the helper returns
        ``F.cross_entropy(y_hat, y)``), the argument given for the helper's parameter."""
        if not self.is_loss_call(call):
            return self._helper_input(call)
        return self._loss_input(call)

    def _loss_input(self, call: cst.Call) -> cst.BaseExpression | None:
        arg = keyword_arg(call, "input")
        if arg is not None:
            return arg.value
        if call.args and call.args[0].keyword is None and not call.args[0].star:
            return call.args[0].value
        return None

    def _helper_input(self, call: cst.Call) -> cst.BaseExpression | None:
        func = call.func
        if isinstance(func, cst.Name):
            leaf = func.value
        elif isinstance(func, cst.Attribute):
            leaf = func.attr.value
        else:
            return None
        if self._helper_names is None:  # names of this file's functions: most calls are not theirs
            self._helper_names = {fn.name.value for fn in self.model.nodes(cst.FunctionDef)}
        if leaf not in self._helper_names:
            return None
        fn = self.model.training.local_function(func)
        found = self._helper_parameter(fn) if fn is not None else None
        if found is None:
            return None
        name, position = found
        arg = keyword_arg(call, name)
        if arg is not None:
            return arg.value
        if isinstance(func, cst.Attribute):  # self.<method>(...): the call does not pass `self`
            position -= 1
        positional = [a for a in call.args if a.keyword is None]
        if position < 0 or position >= len(positional) or any(a.star for a in positional[:position + 1]):
            return None
        return positional[position].value

    def _helper_parameter(self, fn: cst.FunctionDef) -> tuple[str, int] | None:
        """(name, position) of the parameter that ``fn`` hands, unchanged, to the loss every one of its
        ``return`` statements calls (``return F.cross_entropy(y_hat, y)``); None for any other function."""
        key = id(fn)
        if key not in self._helpers:
            self._helpers[key] = None  # cycle guard
            params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
            returns = returns_of(fn)
            inputs = [self._loss_input(r.value) if isinstance(r.value, cst.Call) and self.is_loss_call(r.value)
                      else None for r in returns]
            if returns and all(isinstance(i, cst.Name) and i.value == inputs[0].value for i in inputs) \
                    and inputs[0].value in params \
                    and all((bs := reaching_bindings(self.model, i, r)) and len(bs) == 1 and bs[0].kind == PARAM
                            for i, r in zip(inputs, returns)):
                self._helpers[key] = (inputs[0].value, params.index(inputs[0].value))
        return self._helpers[key]

    def is_loss_call(self, call: cst.Call) -> bool:
        func = call.func
        model = self.model
        if isinstance(func, cst.Attribute):
            leaf = func.attr.value
            if leaf in self._function_leaves:
                return model.qualified_name(func) in self.functions
        elif isinstance(func, cst.Name):
            leaf = func.value
            if leaf not in self.criteria()[1]:
                # also `from torch.nn.functional import cross_entropy as ce`
                if model.qualified_name(func) in self.functions:
                    return True
                bindings = reaching_bindings(model, func, call)
                # def train(model, loader, criterion): criterion(out, y) with a loss every caller passes
                return bool(bindings) and len(bindings) == 1 and bindings[0].kind == PARAM \
                    and self._constructs_loss(func)
        elif isinstance(func, cst.Call):  # nn.CrossEntropyLoss()(input, target)
            return self._constructs_loss(func)
        else:
            return False
        spellings, leaves = self.criteria()
        if leaf not in leaves or dotted(func) not in spellings:
            return False
        if isinstance(func, cst.Name):
            bindings = reaching_bindings(model, func, call)
        else:
            bindings = model.bindings_of(func)
        return bool(bindings) and all(b.kind == ASSIGN and self._constructs_loss(b.value) for b in bindings)

    def _constructs_loss(self, expr: cst.CSTNode | None, depth: int = 0) -> bool:
        if isinstance(expr, cst.Name) and depth == 0:
            # `self.criterion = criterion` with `criterion=nn.CrossEntropyLoss()` as the default,
            # or given one by every caller in the project
            bindings = self.model.bindings_of(expr)
            return bool(bindings) and all(
                b.kind == PARAM and isinstance(b.node, cst.Param) and (
                    self._constructs_loss(b.node.default, 1) or self._passed_loss(b))
                or b.kind == ASSIGN and self._constructs_loss(b.value, 1)
                for b in bindings)
        return isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute)) \
            and self.model.qualified_name(expr.func) in self.classes

    def _passed_loss(self, b: "Binding") -> bool:
        """Whether every call of the function whose parameter ``b`` binds passes one of the losses."""
        if not isinstance(b.value, cst.FunctionDef):
            return False
        from lint_rules.analysis.kinds import ARG_CLASS, agreed_at_call_sites

        project = getattr(self.model, "project_facts", None)
        remote = project.call_facts(ARG_CLASS) if project is not None else None
        return agreed_at_call_sites(
            self.model, b.node, b.value, lambda arg: True if self._constructs_loss(arg, 1) else None,
            (lambda fn: [([c in self.classes or None if c else None for c in a],
                          {k: c in self.classes or None if c else None for k, c in kw.items()})
                         for a, kw in found] if (found := remote(fn)) is not None else None)
            if remote is not None else None) is True

    def criteria(self) -> tuple[set[str], set[str]]:
        """Spellings (and their last parts) of the variables assigned a loss module in the file."""
        if self._criteria is None:
            found: set[str] = set()
            for node in self.model.nodes(cst.Assign):
                value = node.value
                if isinstance(value, cst.Call):
                    func = value.func
                    leaf = func.attr.value if isinstance(func, cst.Attribute) else \
                        func.value if isinstance(func, cst.Name) else None
                    if not (leaf in self._class_leaves or (
                            isinstance(func, cst.Name) and self._constructs_loss(value))):
                        continue
                elif not (isinstance(value, cst.Name) and self._constructs_loss(value)):
                    continue
                for t in node.targets:
                    text = dotted(t.target)
                    if text is not None:
                        found.add(text)
            self._criteria = (found, {text.rsplit(".", 1)[-1] for text in found})
        return self._criteria
