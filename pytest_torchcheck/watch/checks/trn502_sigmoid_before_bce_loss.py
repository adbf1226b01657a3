"""TRN502 at run time: ``binary_cross_entropy`` was given sigmoid outputs saturated on the wrong side of their
targets."""

from __future__ import annotations

from pytest_torchcheck.watch.check import Check, plural
from pytest_torchcheck.watch.checks._common import Sampler, argument, floating, made_by

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def dead_elements(x: Any, target: Any, weight: Any) -> tuple[int, int]:
    """(elements of ``x`` that are exactly 1 with a target below 1 or exactly 0 with a target above 0, and
    carry a non-zero weight; elements exactly 0 or 1). One host sync."""
    import torch

    with torch.no_grad():
        x, target = x.detach(), target.detach()
        one, zero = x == 1, x == 0
        dead = (one & (target < 1)) | (zero & (target > 0))
        if isinstance(weight, torch.Tensor):
            dead &= weight.detach() != 0
        dead_count, saturated = torch.stack([dead.sum(), (one | zero).sum()]).tolist()
    return int(dead_count), int(saturated)


class SigmoidBeforeBceLoss(Check):
    """
    Observed: a call of `torch.nn.functional.binary_cross_entropy` (which `nn.BCELoss` makes) whose input
    came straight from `sigmoid()`, with elements that saturated to exactly 1.0 while their target is
    below 1, or to exactly 0.0 while their target is above 0 (in float32 that takes a logit above about
    17 or below about -104; in half precision far less). For those elements the loss clamps its log at
    -100 and `sigmoid`'s backward multiplies by 0: they are as wrong as they can be and give no gradient,
    where `binary_cross_entropy_with_logits` on the logits gives a full one. Never reported while no
    element saturated on the wrong side (saturating towards its own target is harmless), nor for
    probabilities that did not come from `sigmoid()` directly, nor for elements whose `weight` is 0.
    Checked on a sample of the calls (the first 8, then one in 8), each check costing one reduction.
    """

    CODE = "TRN502"
    NAME = "sigmoid-before-bce-loss"
    SEVERITY = "warning"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._sample = Sampler(every=8)

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.nn.functional.binary_cross_entropy", pre=self._loss)

    def _loss(self, args: tuple, kwargs: dict) -> None:
        x = argument(args, kwargs, 0, "input")
        if not floating(x) or made_by(x) != "SigmoidBackward0" or not self._sample.due():
            return
        target = argument(args, kwargs, 1, "target")
        if not floating(target) or target.shape != x.shape:
            return
        dead, saturated = dead_elements(x, target, argument(args, kwargs, 2, "weight"))
        if not dead:
            return
        dtype = str(x.dtype).replace("torch.", "")
        self.report(self.site(),
                    f"binary_cross_entropy() was given sigmoid() outputs of which {dead} of "
                    f"{plural(x.numel(), 'element')} saturated to exactly 0 or 1 in {dtype} on the wrong side "
                    f"of their target ({saturated} saturated in all): their log is clamped to -100 and their "
                    f"gradient is 0, so the worst predictions teach nothing; pass the logits to "
                    f"binary_cross_entropy_with_logits() (nn.BCEWithLogitsLoss)")
