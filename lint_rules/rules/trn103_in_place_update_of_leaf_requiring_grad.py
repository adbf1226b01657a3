from __future__ import annotations

import libcst as cst

from lint_rules.analysis.context import in_test
from lint_rules.analysis.grad_mode import left_to_callers
from lint_rules.analysis.kinds import LEAF, PARAMETER, kind_at
from lint_rules.analysis.requires_grad import still_requires_grad
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn103 as examples

# In-place tensor methods end in "_"; these few are not data updates.
_NOT_DATA_UPDATES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "detach_",
                               "set_", "resize_", "record_stream_"})
_LEAF_KINDS = frozenset({LEAF, PARAMETER})


class InPlaceUpdateOfLeafRequiringGrad(Rule):
    """
    ## What it does
    Flags an in-place operation (`+=`, `-=`, `*=`, `/=`, `w[i] = ...`, `add_`,
    `sub_`, `mul_`, `div_`, `copy_`, `zero_`, `fill_`, `clamp_`, `uniform_`, ...)
    on a leaf tensor that requires grad: a parameter from `parameters()` or
    `named_parameters()`, an `nn.Parameter`, or a tensor created with
    `requires_grad=True`, when it is not inside `torch.no_grad()` or
    `torch.inference_mode()` (block or decorator), nor in a function that every
    caller runs under one. A `Parameter` made with `requires_grad=False` is not
    flagged. When the file may have switched the leaf's `requires_grad` off (a
    `requires_grad=flag` argument, `w.requires_grad_(False)`, `p.requires_grad = False`
    in a loop over the module's parameters, a loop that reads `p.requires_grad`, the
    parameters of a `copy.deepcopy` such as an EMA or teacher model), or when the
    grad mode is the callers' to decide (a function that nothing in the file calls
    and that trains nothing itself, or one under another package's decorator), or in
    a test, the finding is only possible, reported with `--preview`.

    ## Why is this bad?
    Autograd refuses: `RuntimeError: a leaf Variable that requires grad is being
    used in an in-place operation`, usually hours into a job at the first manual
    weight update, clipping or re-initialisation. Wrapping the update in
    `torch.no_grad()` says that it is not part of the graph.

    ## Example
    ```python
    for p in model.parameters():
        p -= lr * p.grad
    ```

    Use instead:
    ```python
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    ```

    ## Known problems
    Whether `requires_grad` is switched off is read from the file, not from the
    order of its statements, and not through other files: a module frozen by the
    caller that hands it in is still treated as requiring grad. Updates through `.data` bypass autograd's
    checks and are not flagged by this rule. `p.grad.zero_()` is not flagged:
    `p.grad` is not the leaf.

    ## References
    - https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    """

    CODE = "TRN103"
    REQUIRES = ("arameter", "requires_grad")
    NAME = "in-place-update-of-leaf-requiring-grad"
    MESSAGE = "In-place update of a leaf tensor that requires grad outside torch.no_grad(): autograd raises at run time"
    FIX_TITLE = "Wrap the update in `with torch.no_grad():`"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node, node.target)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Subscript):
                self._check(node, t.target.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method.endswith("_") and not method.startswith("_") and method not in _NOT_DATA_UPDATES:
                self._check(node, func.value)

    def _check(self, node: cst.CSTNode, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Subscript):
            target = target.value
        if not self._is_leaf(target, node):
            return
        if self.model.in_no_grad(node):
            return
        requires = still_requires_grad(self.model, target, node)
        if requires is not False:
            # certain only when nothing in the file may have switched its requires_grad off, and
            # the grad mode is not the unseen callers' to decide
            self.report(node, certain=requires is True and not left_to_callers(self.model, node)
                        and not in_test(self.model, node))

    def _is_leaf(self, expr: cst.CSTNode, at: cst.CSTNode) -> bool:
        model = self.model
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("grad", "data"):
            return False
        return kind_at(model, expr, at) in _LEAF_KINDS
