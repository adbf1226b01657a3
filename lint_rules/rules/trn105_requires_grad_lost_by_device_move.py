from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import LEAF, PARAMETER
from lint_rules.analysis.model import ASSIGN, keyword_arg
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn105 as examples

# Tensor methods that copy to another device or dtype; the copy is a new, non-leaf tensor.
_MOVES = frozenset({"to", "cuda", "cpu", "double", "float", "half", "bfloat16", "type", "xpu", "mps"})
# Methods that are no-ops on a freshly created float32 CPU tensor unless the factory said otherwise.
_NOOP_ON_DEFAULT = {"float": "dtype", "cpu": "device"}
_FLOAT32 = frozenset({"torch.float32", "torch.float"})
_FACTORY_KINDS = frozenset({LEAF, PARAMETER})


class RequiresGradLostByDeviceMove(Rule):
    """
    ## What it does
    Flags a device or dtype move (`.to(...)`, `.cuda()`, `.double()`, `.half()`,
    `.type(...)`, ...) applied directly to a tensor created with
    `requires_grad=True` (`torch.randn(..., requires_grad=True)`,
    `torch.zeros(...).requires_grad_()`) or to an `nn.Parameter(...)`, and the
    rebinding `w = w.to(device)` of such a leaf.

    ## Why is this bad?
    The move returns a copy that autograd records as an operation on the leaf: the
    copy is a non-leaf tensor. After `backward()` its `.grad` stays `None` (PyTorch
    only warns), `torch.optim.SGD([w])` raises `ValueError: can't optimize a
    non-leaf Tensor`, and `self.w = nn.Parameter(t).cuda()` is a plain attribute
    that is not a parameter at all: it is never trained, never saved in the
    `state_dict`. The variable the code keeps is not the tensor that gets gradients.

    ## Example
    ```python
    w = torch.randn(10, 1, requires_grad=True).to(device)
    optimizer = torch.optim.SGD([w], lr=0.1)
    ```

    Use instead:
    ```python
    w = torch.randn(10, 1, device=device, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    ```

    ## Known problems
    On a CPU-only run `.to("cpu")` returns the same tensor, so the code works there
    and breaks only on a GPU; the rule flags it regardless. `.float()` and `.cpu()`
    are flagged only when the factory names another dtype or device, since they are
    no-ops on a default float32 CPU tensor. A leaf that reaches the move through a
    function call or a container is not followed.

    ## References
    - https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
    - https://pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html
    - https://pytorch.org/docs/stable/generated/torch.Tensor.to.html
    """

    CODE = "TRN105"
    REQUIRES = ("requires_grad", "Parameter")
    NAME = "requires-grad-lost-by-device-move"
    MESSAGE = ("Moving a tensor that requires grad returns a non-leaf copy: its .grad stays None "
               "and an optimizer cannot update it")
    FIX_TITLE = "Create the tensor on its device and dtype (`device=`, `dtype=`) with requires_grad=True"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _MOVES:
            return
        receiver = func.value
        if isinstance(receiver, cst.Call):
            if self.model.kind_of(receiver) not in _FACTORY_KINDS:
                return
            if not self._changes_tensor(func.attr.value, node, _factory_call(receiver)):
                return
            if self._rewrapped(node):
                return
            self.report(node)
        elif isinstance(receiver, cst.Name):
            self._check_rebinding(node, receiver)

    def _check_rebinding(self, node: cst.Call, receiver: cst.Name) -> None:
        """``w = w.to(device)``: the only name of the leaf now holds the copy."""
        stmt = self.model.parent(node)
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            return
        target = stmt.targets[0].target
        if not isinstance(target, cst.Name) or target.value != receiver.value:
            return
        previous = _previous_assignment(self.model, receiver, stmt)
        if previous is None or not isinstance(previous.value, cst.Call):
            return
        if self.model.kind_of(previous.value) != LEAF:
            return
        if self._changes_tensor(node.func.attr.value, node, _factory_call(previous.value)):
            self.report(node)

    def _changes_tensor(self, method: str, move: cst.Call, factory: cst.Call) -> bool:
        """False for a move that returns the tensor itself (``.float()`` of a float32 tensor)."""
        keyword = _NOOP_ON_DEFAULT.get(method)
        if keyword is None:
            if method == "to" and len(move.args) == 1 and move.args[0].keyword is None:
                q = self.model.qualified_name(move.args[0].value)
                if q in _FLOAT32 and keyword_arg(factory, "dtype") is None:
                    return False
            return True
        arg = keyword_arg(factory, keyword)
        if arg is None:
            return False
        if keyword == "dtype":
            return self.model.qualified_name(arg.value) not in _FLOAT32
        value = arg.value
        return not (isinstance(value, cst.SimpleString) and value.evaluated_value == "cpu")

    def _rewrapped(self, node: cst.Call) -> bool:
        """``nn.Parameter(<move>)`` makes a new leaf; ``<move>.detach()``/``.requires_grad_()`` too."""
        parent = self.model.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr.value in ("detach", "requires_grad_", "detach_"):
            return True
        if isinstance(parent, cst.Arg):
            call = self.model.parent(parent)
            if isinstance(call, cst.Call) and self.model.kind_of(call) == PARAMETER:
                return True
        return False


def _factory_call(call: cst.Call) -> cst.Call:
    """The ``torch.<factory>(...)`` call under ``torch.<factory>(...).requires_grad_()``."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and isinstance(func.value, cst.Call):
        return func.value
    return call


def _previous_assignment(model, name: cst.Name, stmt: cst.CSTNode):
    """The last plain assignment of ``name`` before ``stmt`` in the same scope, if any."""
    bindings = model.bindings_of(name)
    if not bindings:
        return None
    here = model.order.get(id(stmt))
    best = None
    best_order = -1
    for b in bindings:
        pos = model.order.get(id(b.node))
        if pos is None or here is None or pos >= here:
            continue
        if pos > best_order:
            best, best_order = b, pos
    if best is None or best.kind != ASSIGN:
        return None
    return best
