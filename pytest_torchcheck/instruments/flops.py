"""Floating-point operations: the ``flops`` instrument is torch's own flop counter, by operator."""

from __future__ import annotations

from pytest_torchcheck.instruments.base import Instrument, register
from pytest_torchcheck.instruments.measurement import Measurement


@register
class Flops(Instrument):
    NAME = "flops"
    WHAT = "floating-point operations, by operator (torch.utils.flop_counter)"
    ORDER = 10  # outermost, as before the split: the other modes' operators are the user's

    def start(self) -> None:
        from torch.utils.flop_counter import FlopCounterMode

        self.counter = FlopCounterMode(display=False)
        self.counter.__enter__()

    def stop(self) -> None:
        self.counter.__exit__(None, None, None)

    def fill(self, m: Measurement) -> None:
        m.flops = int(self.counter.get_total_flops())
        m.flops_by_op = {str(k): int(v) for k, v in self.counter.get_flop_counts().get("Global", {}).items()}
