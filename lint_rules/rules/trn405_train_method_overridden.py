from __future__ import annotations

import libcst as cst

from lint_rules.analysis.model import is_true
from lint_rules.rule import Rule
from lint_rules.analysis.modules import facts
from lint_rules.rules.examples import trn405 as examples


class TrainMethodOverridden(Rule):
    """
    ## What it does
    Flags a method `train` defined in an `nn.Module` subclass whose signature is
    not `train(self, mode=True)` (an annotation such as `mode: bool = True` and
    extra parameters that have defaults are fine, and so is `train(self, *args)`, which
    takes `train(False)` as `model.eval()` passes it): a training routine named
    `train(self, loader, epochs)`, a `train(self)` without `mode`, or a `mode`
    that defaults to something other than `True`.

    ## Why is this bad?
    `nn.Module.train(mode=True)` is how PyTorch switches dropout and batch norm
    between training and evaluation: `model.eval()` calls `self.train(False)`, and
    every parent module calls `child.train(mode)` on its children. Overriding it
    with another meaning breaks all of them: `model.eval()` raises `TypeError`, or,
    worse, runs a whole training routine, and evaluation of any parent model
    either crashes or leaves this module in the wrong mode, so dropout stays on
    while you measure accuracy.

    ## Example
    ```python
    class Net(nn.Module):
        def train(self, loader, epochs):
            for _ in range(epochs):
                ...
    ```

    Use instead:
    ```python
    class Net(nn.Module):
        def fit(self, loader, epochs):
            self.train()
            for _ in range(epochs):
                ...
    ```

    ## Known problems
    Only the signature is checked: an override with the right signature that
    forgets to call `super().train(mode)` or to `return self` is not flagged.
    Classes whose base is imported from another file count as modules only when
    the base's name ends in `Module` or the class defines `forward`.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    """

    CODE = "TRN405"
    REQUIRES = ("train",)
    NAME = "train-method-overridden"
    MESSAGE = "train() overridden with a signature other than train(self, mode=True): breaks model.train()/model.eval()"
    FIX_TITLE = "Rename the method (fit, train_epoch), or keep the signature train(self, mode=True)"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value != "train":
            return
        cls = self._facts.method_of(node)
        if cls is None or not self._facts.is_module_class(cls) or _mode_signature(node.params):
            return
        self.report(node.name)


def _mode_signature(params: cst.Parameters) -> bool:
    """``(self, mode=True, <optional extras>)``, or ``(self, *args, ...)``: a method that takes
    ``train()`` and ``train(False)`` as PyTorch calls it (it may still check what it was given)."""
    positional = [*params.posonly_params, *params.params]
    if len(positional) == 1 and isinstance(params.star_arg, cst.Param) \
            and all(p.default is not None for p in params.kwonly_params):
        return True
    if len(positional) < 2:
        return False
    mode = positional[1]
    if mode.name.value != "mode" or not is_true(mode.default):
        return False
    if any(p.default is None for p in positional[2:]):
        return False
    return all(p.default is not None for p in params.kwonly_params)
