"""TRN604 at run time: ``F.dropout()`` left at ``training=True`` ran in the forward of a module in eval mode."""

from __future__ import annotations

from pytest_torchcheck.watch.check import Check
from pytest_torchcheck.watch.checks._common import argument, passed, user_frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FUNCTIONS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


class _Named:
    """``check._dropout`` with the function's name: bound (``__self__``) so the watch knows its owner."""

    def __init__(self, check: FunctionalDropoutIgnoresMode, name: str) -> None:
        self.__self__, self.name = check, name

    def __call__(self, args: tuple, kwargs: dict) -> None:
        self.__self__._dropout(self.name, args, kwargs)


class FunctionalDropoutIgnoresMode(Check):
    """
    Observed: your code called `torch.nn.functional.dropout` (or `dropout1d/2d/3d`, `alpha_dropout`,
    `feature_alpha_dropout`) with `p > 0` and without passing `training`, so it took its default `True`,
    from a method of an `nn.Module` (the calling function's `self`) that was in eval mode at that
    moment: dropout was applied during evaluation. A call that passes `training` itself (`training=
    self.training`, or `training=True` written out for Monte Carlo dropout) is never reported, nor one
    made while its module is in training mode, nor one made outside a module's method. `nn.Dropout`
    layers follow the mode themselves and are not concerned.
    """

    CODE = "TRN604"
    NAME = "functional-dropout-ignores-mode"
    SEVERITY = "error"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def install(self, events: Any) -> None:
        super().install(events)
        for name in FUNCTIONS:
            events.intercept(f"torch.nn.functional.{name}", pre=_Named(self, name), direct=True)

    def _dropout(self, name: str, args: tuple, kwargs: dict) -> None:
        if passed(args, kwargs, 2, "training"):
            return
        p = argument(args, kwargs, 1, "p", 0.5)
        if not p:
            return
        frame = user_frame(self.events.sites)
        if frame is None or "self" not in frame.f_code.co_varnames:
            return
        import torch

        owner = frame.f_locals.get("self")
        if not isinstance(owner, torch.nn.Module) or owner.training:
            return
        kind = type(owner).__name__
        self.report(self.site(),
                    f"F.{name}(p={p}) ran with training=True, its default, in {kind}.{frame.f_code.co_name}() "
                    f"while this {kind} was in eval mode: dropout was applied during evaluation, so "
                    f"predictions are noisy and differ from run to run; pass training=self.training")
