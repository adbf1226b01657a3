"""TRN503 at run time: ``log()`` of softmax probabilities gave ``-inf``."""

from __future__ import annotations

from pytest_torchcheck.watch.check import Check, plural
from pytest_torchcheck.watch.checks._common import Sampler, floating, made_by

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class LogOfSoftmax(Check):
    """
    Observed: a call of `torch.log(p)` or `p.log()` in your code, where `p` came straight from `softmax()`
    with autograd recording, that returned `-inf` (probabilities that underflowed to exactly 0): the
    loss becomes infinite and the gradient of `log` at 0 is NaN, where `log_softmax()` computes the same
    values without underflow. `log()` of softmax outputs that stay above 0 is never reported, nor
    `log(p + eps)`, `log(p.clamp(min=...))`, nor a softmax computed without autograd (its origin is
    unknown). Checked on a sample of the calls (the first 16, then one in 16), each check costing one
    reduction.
    """

    CODE = "TRN503"
    NAME = "log-of-softmax"
    SEVERITY = "warning"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._sample = Sampler(first=16, every=16)

    def install(self, events: Any) -> None:
        super().install(events)
        for target in ("torch.log", "torch.Tensor.log"):
            events.intercept(target, post=self._log, direct=True)

    def _log(self, args: tuple, kwargs: dict, result: Any) -> None:
        p = args[0] if args else kwargs.get("input")
        if made_by(p) != "SoftmaxBackward0" or not floating(result) or not self._sample.due():
            return
        import torch

        with torch.no_grad():
            count = int(torch.isneginf(result.detach()).sum())
        if count:
            self.report(self.site(),
                        f"log() of softmax probabilities gave -inf in {count} of "
                        f"{plural(result.numel(), 'element')}: those probabilities underflowed to 0, so the "
                        f"loss is infinite and the gradient of log at 0 is NaN; use log_softmax(), which "
                        f"computes the same values without underflow")
