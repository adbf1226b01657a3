"""Wall time: the ``timer`` instrument times each repeated run (CUDA events when CUDA is in use)."""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from pytest_torchcheck.instruments.base import REPEATS, Instrument, register
from pytest_torchcheck.instruments.measurement import Measurement


class Timer:
    """Wall time of one run; with CUDA in use, CUDA events on the current stream after a synchronise."""

    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        self.method = "CUDA events (current stream)" if self.cuda else "time.perf_counter"

    def run(self, fn: Callable[[], Any]) -> float:
        if self.cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


@register
class TimerInstrument(Instrument):
    NAME = "timer"
    WHAT = "wall time of each repeated run"
    SCOPE = REPEATS
    ORDER = 20  # innermost: it times the run alone, not the other instruments' readings

    def start(self) -> None:
        self.timer = Timer()
        self.times: list[float] = []

    def wrap(self, call: Callable[[], Any]) -> Callable[[], Any]:
        def timed() -> None:
            self.times.append(self.timer.run(call))

        return timed

    def fill(self, m: Measurement) -> None:
        m.times = self.times
        m.time_method = self.timer.method
