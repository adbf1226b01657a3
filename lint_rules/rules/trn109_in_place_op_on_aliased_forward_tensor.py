from __future__ import annotations

import libcst as cst

from lint_rules.analysis.aliasing import ForwardAliasing
from lint_rules.analysis.modules import ModuleFacts
from lint_rules.analysis.summaries import Summaries
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn109 as examples

_INPUT_MESSAGE = ("In-place op in forward() overwrites the caller's input tensor (or a view "
                  "of it): its other uses and autograd see the new values")


class InPlaceOpOnAliasedForwardTensor(Rule):
    """
    ## What it does
    In the `forward` method of an `nn.Module` subclass, flags an in-place operation
    (`x += y`, `x[..., 0] = v`, `x.relu_()`, `F.relu(x, inplace=True)`, a module
    built with `inplace=True` such as `nn.ReLU(inplace=True)`) on a tensor that is
    used again: one that another name still refers to and reads later (a residual
    `shortcut = x`, a feature kept in a list, a view), or a tensor that belongs to
    the caller (a `forward` argument, or a view of one). Aliasing is followed
    through assignments, views (`view`, `reshape`, `transpose`, slicing, `detach`)
    and `list.append`. A call of a helper of the same file that writes its argument
    in place (`self._normalize_(x)` whose body does `x -= self.mean`) is an in-place
    op at the call, three calls deep.

    ## Why is this bad?
    An in-place op changes the storage every alias shares. The residual branch then
    adds the activated tensor instead of the block's input, and the caller's tensor
    changes under it (its own skip connection, a feature map it returns): the
    network computes something else than it says and trains worse, with no error.
    Where autograd saved the tensor for backward, it fails later with `one of the
    variables needed for gradient computation has been modified by an inplace
    operation`, far from the cause.

    ## Example
    ```python
    class PreActBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.act = nn.ReLU(inplace=True)
            self.conv = nn.Conv2d(c, c, 3, padding=1)

        def forward(self, x):
            shortcut = x
            x = self.act(x)  # also overwrites `shortcut` and the caller's tensor
            return self.conv(x) + shortcut
    ```

    Use instead:
    ```python
        def forward(self, x):
            shortcut = x
            x = F.relu(x)
            return self.conv(x) + shortcut
    ```

    Tier: preview. On code nobody here had read, none of the sampled findings was
    worth a change.

    ## Known problems
    Aliasing is tracked by variable name within `forward`: through `nn.Sequential`
    (whose first layer is in-place), attributes (`self.cache = x`), dictionaries
    and what a helper returns it is not followed. A helper's in-place writes count
    only when the argument is known to be a tensor at the call (an annotation, a
    tensor-valued expression, or uses such as `x.shape` or `self.conv(x)`), and
    helpers of other modules are not seen. After an `if` whose branches bind a name
    differently, the name is treated as a new tensor, so an alias that exists in one
    branch only is missed. `x += y` and `x[i] = v` count only when `x` is known to be
    a tensor. In-place ops guarded by an explicit `inplace` option
    (`x.mul_(g) if self.inplace else x * g`) are the caller's choice and are not
    flagged.

    ## References
    - https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd
    - https://pytorch.org/docs/stable/generated/torch.nn.ReLU.html
    - https://pytorch.org/docs/stable/tensor_view.html
    """

    CODE = "TRN109"
    REQUIRES = ("forward",)
    NAME = "in-place-op-on-aliased-forward-tensor"
    MESSAGE = ("In-place op in forward() overwrites a tensor that another name reads later "
               "(a saved shortcut, a view, a list of features)")
    FIX_TITLE = "Use the out-of-place op (`x = x + y`, `F.relu(x)`, `inplace=False`) or clone first"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value != "forward":
            return
        classdef = self._owning_class(node)
        if classdef is None or not self.model.fact(ModuleFacts).is_module_class(classdef):
            return
        flow = ForwardAliasing(self.model, node, self.model.fact(Summaries).written_args)
        flow.run()
        for write in flow.input_writes:
            self.report(write, _INPUT_MESSAGE)
        for write in flow.aliased_writes:
            self.report(write)

    def _owning_class(self, fn: cst.FunctionDef) -> cst.ClassDef | None:
        for anc in self.model.ancestors(fn):
            if isinstance(anc, cst.ClassDef):
                return anc
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return None
        return None
