from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.model import is_true
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.names import SET_GRAD_ENABLED
from lint_rules.analysis.evaluation import FileFacts, FUNCTION_SCOPES
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn601 as examples

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

class EvaluationWithoutNoGrad(Rule):
    """
    ## What it does
    Flags an evaluation loop that calls the model with autograd on. An evaluation
    loop iterates data (a `DataLoader`, an iterable spelled like one: `val_loader`,
    `test_data`, `self.loaders["valid"]`, ..., or a `range` loop that fetches a batch: `X, Y =
    get_batch("val")`), calls a model, and neither calls `backward()`, steps or
    hands over an optimizer, nor asks for input gradients. It is quiet
    under `torch.no_grad()`, `torch.inference_mode()` (as a block or a decorator),
    `torch.set_grad_enabled(...)` (as a block, or called with `False` earlier in
    the function or module), after `stack.enter_context(torch.no_grad())` in a
    `with contextlib.ExitStack() as stack:`, under a decorator of this file that
    wraps one of those, and in a function that this file calls from inside such a
    block (up to three calls up).

    ## Why is this bad?
    With autograd on, every forward pass records its graph and keeps every
    intermediate activation alive for a backward that never comes. Evaluation
    runs 1.5-2x slower and needs several times the memory of the forward alone:
    a validation batch size that fits under `no_grad` runs out of memory, and
    outputs collected across the loop (`preds.append(model(x))`) keep each
    batch's whole graph alive until the loop ends.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    ```

    Use instead:
    ```python
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Known problems
    A loop is recognised as iterating data from a `DataLoader` built in the file
    or, as a last resort, from the spelling of the iterable or of the call that
    fetches the batch; other loops (`while` loops, `for batch in queue`) are not
    checked. A model is recognised from
    its construction, a `nn.Module` annotation, or a name such as `model` or
    `net`. Comprehensions (`[model(x) for x in loader]`) are not checked. A
    function that is only called from another module under `no_grad`, or whose
    model has `requires_grad_(False)` parameters, is still flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.no_grad.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html
    - https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
    """

    CODE = "TRN601"
    NAME = "evaluation-without-no-grad"
    MESSAGE = "Evaluation loop runs the model with autograd on: it records graphs and keeps activations for nothing"
    FIX_TITLE = "Wrap the evaluation loop in torch.no_grad() or torch.inference_mode()"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._facts = model.fact(FileFacts)
        self._grad_disabled_at: dict[int, int] | None = None

    def visit_For(self, node: cst.For) -> None:
        if any(not self._grad_managed(call, node) for call in self._facts.evaluation_calls(node)) \
                or any(not self._grad_managed_in_helper(site, inner, node)
                       for site, inner in self._facts.evaluation_helper_calls(node)):
            self.report(node)

    def _grad_managed_in_helper(self, site: cst.Call, inner: cst.Call, loop: cst.For) -> bool:
        """The model call in a helper: grad is off around the helper's call, or inside it."""
        model = self.model
        helper = model.enclosing_function(inner)
        return self._grad_managed(site, loop) or model.in_no_grad(inner) \
            or self._under_set_grad_enabled(inner) \
            or isinstance(helper, cst.FunctionDef) and model.fact(Summaries).of(helper).no_grad

    def _grad_managed(self, call: cst.Call, loop: cst.For) -> bool:
        model = self.model
        if model.in_no_grad(call) or self._under_set_grad_enabled(call):
            return True
        fn = model.enclosing_function(loop)
        if self._grad_disabled_before(loop, fn):
            return True
        if isinstance(fn, cst.FunctionDef):
            return any(model.in_no_grad(site) or self._under_set_grad_enabled(site)
                       for site in self._facts.call_sites(fn))
        return False

    def _under_set_grad_enabled(self, node: cst.CSTNode) -> bool:
        """Inside ``with torch.set_grad_enabled(<anything>)``: the author manages grad mode."""
        for a in self.model.ancestors(node):
            if isinstance(a, FUNCTION_SCOPES):
                return False
            if isinstance(a, cst.With):
                for item in a.items:
                    expr = item.item
                    if isinstance(expr, cst.Call) and self.model.qualified_name(expr.func) == SET_GRAD_ENABLED:
                        return True
        return False

    def _grad_disabled_before(self, loop: cst.For, fn: cst.CSTNode | None) -> bool:
        """``torch.set_grad_enabled(False)`` as a statement earlier in the function or module."""
        if self._grad_disabled_at is None:  # the first such statement of each function (None: module level)
            first: dict[int, int] = {}
            for call in self.model.nodes(cst.Call):
                if call.args and not is_true(call.args[0].value) \
                        and isinstance(self.model.parent(call), cst.Expr) \
                        and self.model.qualified_name(call.func) == SET_GRAD_ENABLED:
                    first.setdefault(id(self.model.enclosing_function(call)), self.model.order[id(call)])
            self._grad_disabled_at = first
        index = self.model.order[id(loop)]
        first = self._grad_disabled_at
        return first.get(id(None), index) < index or (fn is not None and first.get(id(fn), index) < index)
