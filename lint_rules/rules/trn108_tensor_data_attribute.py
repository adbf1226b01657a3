from __future__ import annotations

import libcst as cst

from lint_rules.analysis import names as N
from lint_rules.analysis.kinds import LEAF, LOSS, MODULE, PARAMETER
from lint_rules.analysis.model import FOR, PARAM, call_method, dotted
from lint_rules.analysis.mutations import reads_attribute
from lint_rules.analysis.training import BACKWARD, STEP
from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.autograd_flow import class_has_base, enclosing_class, is_torch_module_class
from lint_rules.rules.examples import trn108 as examples

_LABELS = {PARAMETER: "parameter", LEAF: "tensor that requires grad", LOSS: "loss"}
_GRAD_KINDS = frozenset(_LABELS)
# Attributes of an nn.Module that hold its parameters.
_PARAM_ATTRS = frozenset({"weight", "bias"})
# Iterating these on a module yields modules.
_MODULE_ITERATORS = frozenset({"modules", "children"})
_NAMED_MODULE_ITERATORS = frozenset({"named_modules", "named_children"})


def _is_write(model, node: cst.Attribute) -> bool:
    """``x.data`` is written: an in-place method on it (``x.data.add_()``), or an assignment target
    (``x.data = t``, ``x.data -= t``, ``x.data[i] = t``)."""
    parent = model.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        call = model.parent(parent)
        return parent.attr.value.endswith("_") and not parent.attr.value.startswith("_") \
            and isinstance(call, cst.Call) and call.func is parent
    target = node
    if isinstance(parent, cst.Subscript) and parent.value is node:
        target, parent = parent, model.parent(parent)
    if isinstance(parent, cst.AssignTarget) and parent.target is target:
        return True
    return isinstance(parent, cst.AugAssign) and parent.target is target


def _written_values(model, node: cst.Attribute) -> list[cst.CSTNode]:
    """What is written through ``x.data``: the in-place method's arguments, or the assigned value
    (not the receiver: ``p.grad.data.mul_(c)`` scales a gradient by ``c``)."""
    parent = model.parent(node)
    if isinstance(parent, cst.Attribute):
        call = model.parent(parent)
        return [a.value for a in call.args] if isinstance(call, cst.Call) else []
    for anc in model.ancestors(node):
        if isinstance(anc, (cst.Assign, cst.AugAssign)):
            return [anc.value]
    return []


class TensorDataAttribute(Rule):
    """
    ## What it does
    Flags writes through `.data` (`p.data.add_(...)`, `p.data = t`, `w.data -= ...`,
    `p.grad.data.clamp_(...)`) to a parameter (`p` from `parameters()`,
    `self.fc.weight`, `m.bias` of a module), a gradient, or a tensor created with
    `requires_grad=True`, while training: inside a training loop (one that calls
    `backward()` or an optimizer's `step()`), in a function that runs a training
    step, or in a hand-written update that reads a `.grad`. Code under
    `torch.no_grad()`/`torch.inference_mode()` and optimizer `step()` methods are
    left alone.

    Reads of `.data` (logging, assertions, copies), and writes at build time
    (`__init__`, weight-init functions passed to `apply()`, module conversion) are
    not reported: nothing is training then, so the missing checks guard nothing.

    ## Why is this bad?
    `.data` returns a tensor that shares storage with the original but is invisible
    to autograd: no graph and no version counter. An in-place update through it that
    races with a pending `backward()` is not detected, so instead of the error
    `one of the variables needed for gradient computation has been modified by an
    inplace operation`, the gradients are silently computed from the modified values.
    `p.data = t` swaps storage behind the optimizer's and DDP's back. PyTorch keeps
    `.data` for backwards compatibility only; `torch.no_grad()` and `.detach()` do
    the same job with the checks in place.

    ## Example
    ```python
    for x, y in loader:
        loss_fn(model(x), y).backward()
        for p in model.parameters():
            p.data.add_(p.grad.data, alpha=-lr)
    ```

    Use instead:
    ```python
    for x, y in loader:
        loss_fn(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
    ```

    Confidence: a hand-written optimizer step, a parameter's `.data` moved by a
    gradient (`p.data.add_(p.grad, alpha=-lr)`, `w.data -= lr * w.grad.data`) while
    training, is *certain* and reported by default. Other writes (a gradient copied
    back after an all-reduce, weights clamped in place) work as meant and are
    *possible* (`--preview`).

    ## Known problems
    A write in a helper function called from the training loop (`clip_weights(model)`)
    is not followed into the helper. Model outputs and other intermediate tensors are
    not recognised as requiring grad. Any method named `step` is taken for an
    optimizer's (its base class may live in another file).

    ## References
    - https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd
    - https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    """

    CODE = "TRN108"
    REQUIRES = ("data",)
    NAME = "tensor-data-attribute"
    MESSAGE = "`.data` bypasses autograd's checks on a tensor that requires grad"
    FIX_TITLE = "Use `.detach()`, or do the update under `torch.no_grad()`"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._statements: set[int] = set()
        self._applied: set[str] | None = None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data":
            return
        receiver = node.value
        if not isinstance(receiver, (cst.Name, cst.Attribute, cst.Subscript)):
            return
        parent = self.model.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "data":
            return
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
            return  # `x.data.data`: reported at the inner one if at all
        what = self._requires_grad(receiver)
        if what is None:
            return
        if not _is_write(self.model, node):
            return  # a read (logging, an assertion, a copy) changes nothing
        if self.model.in_no_grad(node) or self._in_optimizer_class(node):
            return
        if not self._while_training(node):
            return
        # One finding per statement: `p.data.add_(p.grad.data)` is one fix.
        stmt = next((a for a in self.model.ancestors(node)
                     if isinstance(a, (cst.BaseSmallStatement, cst.BaseCompoundStatement))), None)
        key = id(stmt) if stmt is not None else id(node)
        if key in self._statements:
            return
        self._statements.add(key)
        # A hand-written optimizer step (a parameter's .data moved by its .grad) is the textbook case
        # torch.no_grad() replaced: certain. Other writes (gradients copied back after an all-reduce,
        # clamped weights) work and are a matter of style: possible.
        certain = what == "parameter" and any(reads_attribute(v, "grad") for v in _written_values(self.model, node))
        self.report(node, f"`.data` of a {what} bypasses autograd's checks: use `.detach()` or `torch.no_grad()`",
                    certain=certain)

    def _requires_grad(self, expr: cst.CSTNode) -> str | None:
        """What ``expr`` is when autograd tracks it (parameter, gradient, ...), else None."""
        model = self.model
        if isinstance(expr, cst.Attribute) and expr.attr.value == "grad":
            return "gradient" if self._requires_grad(expr.value) else None
        if isinstance(expr, cst.Subscript):
            return None
        kind = model.kind_of(expr)
        if kind in _GRAD_KINDS:
            return _LABELS[kind]
        if isinstance(expr, cst.Attribute) and expr.attr.value in _PARAM_ATTRS and self._is_module(expr.value):
            return "parameter"
        return None

    def _is_module(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """``expr`` is an ``nn.Module``: from its kind, an isinstance guard, or how it was reached."""
        model = self.model
        kind = model.kind_of(expr)
        if kind is not None:
            return kind == MODULE
        if self._isinstance_module(expr):
            return True
        if depth > 4:
            return False
        if isinstance(expr, cst.Attribute):
            # a submodule: `self.head.fc`, `model.embed`
            return self._is_module(expr.value, depth + 1)
        if not isinstance(expr, cst.Name):
            return False
        if expr.value == "self":
            return self._in_module_class(expr)
        for b in model.bindings_of(expr) or ():
            if b.kind == FOR and self._iterates_modules(b.node, expr, depth) \
                    and (model.is_inside(expr, b.node) or isinstance(b.node, cst.CompFor)):
                return True
            if b.kind == PARAM and self._applied_function(b.value):
                return True
        return False

    def _iterates_modules(self, loop: cst.CSTNode, name: cst.Name, depth: int) -> bool:
        """``for m in model.modules()``, ``for n, m in model.named_modules()``, ``for blk in self.blocks``."""
        if not isinstance(loop, (cst.For, cst.CompFor)):
            return False
        iterable = loop.iter
        target = loop.target
        method = call_method(iterable)
        if method in _MODULE_ITERATORS:
            return isinstance(target, cst.Name)
        if method in _NAMED_MODULE_ITERATORS or (
                isinstance(iterable, cst.Call) and self.model.qualified_name(iterable.func) == "builtins.enumerate"):
            if not isinstance(target, (cst.Tuple, cst.List)) or not target.elements:
                return False
            last = target.elements[-1].value
            if not (isinstance(last, cst.Name) and last.value == name.value):
                return False
            if method in _NAMED_MODULE_ITERATORS:
                return True
            iterable = iterable.args[0].value if iterable.args else iterable
        elif not isinstance(target, cst.Name):
            return False
        # the children of a ModuleList/Sequential attribute of a module
        return isinstance(iterable, cst.Attribute) and self._is_module(iterable.value, depth + 1)

    def _in_module_class(self, node: cst.CSTNode) -> bool:
        cls = enclosing_class(self.model, node)
        return cls is not None and class_has_base(self.model, cls, is_torch_module_class)

    def _applied_function(self, fn: cst.CSTNode) -> bool:
        """``model.apply(fn)`` calls ``fn`` on every submodule: its argument is a module."""
        if not isinstance(fn, cst.FunctionDef):
            return False
        applied = self._applied
        if applied is None:  # once per file: the last parts of what `<x>.apply(<fn>)` calls apply
            applied = self._applied = set()
            for call in self.model.nodes(cst.Call):
                if call_method(call) == "apply" and len(call.args) == 1:
                    text = dotted(call.args[0].value)
                    if text is not None:
                        applied.add(text.rsplit(".", 1)[-1])
        return fn.name.value in applied

    def _isinstance_module(self, expr: cst.CSTNode) -> bool:
        """Inside ``if isinstance(m, nn.Linear):`` (or a tuple of torch.nn classes)."""
        model = self.model
        text = dotted(expr)
        if text is None:
            return False
        for anc in model.ancestors(expr):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if not isinstance(anc, cst.If) or model.is_inside(expr, anc.test):
                continue
            tests = [anc.test]
            while tests:
                test = tests.pop()
                if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
                    tests.extend((test.left, test.right))
                elif isinstance(test, cst.Call) and model.qualified_name(test.func) == "builtins.isinstance" \
                        and len(test.args) == 2 and dotted(test.args[0].value) == text:
                    classes = test.args[1].value
                    elements = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
                    if any((model.qualified_name(e) or "").startswith("torch.nn.") for e in elements):
                        return True
        return False

    def _in_optimizer_class(self, node: cst.CSTNode) -> bool:
        """Optimizer implementations update parameters in place by design; a ``step`` method is one
        even when its base class (``Optimizer``, a project's ``BaseOptimizer``) is not visible here."""
        cls = enclosing_class(self.model, node)
        if cls is None:
            return False
        fn = self.model.enclosing_function(node)
        if isinstance(fn, cst.FunctionDef) and fn.name.value == "step":
            return True
        return class_has_base(self.model, cls, N.is_optimizer_class)

    def _while_training(self, node: cst.CSTNode) -> bool:
        """In a training loop, in a function that runs a training step, or an update that reads ``.grad``."""
        model = self.model
        facts = model.training
        if any(facts.is_training_loop(loop) for loop in model.enclosing_loops(node)):
            return True
        fn = model.enclosing_function(node)
        if fn is not None and any(ev.kind in (BACKWARD, STEP) for ev in facts.function_events(fn)):
            return True
        return any(reads_attribute(v, "grad") for v in _written_values(model, node))
