"""Memory growth: the ``held_memory`` instrument reads the memory still held after each repeated run."""

from __future__ import annotations

import gc
from typing import Any, Callable

import torch

from pytest_torchcheck.instruments.base import REPEATS, Instrument, register
from pytest_torchcheck.instruments.malloc import cpu_in_use
from pytest_torchcheck.instruments.measurement import Measurement


def memory_held(cuda: bool) -> dict[str, int]:
    """Bytes held now, per device (``cpu`` from malloc, ``cuda:N`` from the caching allocator), after a collection."""
    gc.collect()
    held = {"cpu": cpu_in_use()} if cpu_in_use is not None else {}
    if cuda:
        for d in range(torch.cuda.device_count()):
            held[f"cuda:{d}"] = torch.cuda.memory_allocated(d)
    return held


@register
class HeldMemory(Instrument):
    NAME = "held_memory"
    WHAT = "memory still held after each repeated run, per device"
    SCOPE = REPEATS
    ORDER = 10  # outside the timer: its collection and reading are not timed

    def start(self) -> None:
        self.cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        # Garbage cycles must not look like growth, so each reading follows a full collection. Objects
        # that existed before the region are frozen out of it: a collection then walks only what the
        # runs created (milliseconds instead of a tenth of a second with torch's objects around).
        gc.collect()
        gc.freeze()
        self.held = [memory_held(self.cuda)]

    def stop(self) -> None:
        gc.unfreeze()

    def wrap(self, call: Callable[[], Any]) -> Callable[[], Any]:
        def then_read() -> None:
            call()
            self.held.append(memory_held(self.cuda))

        return then_read

    def fill(self, m: Measurement) -> None:
        m.growth = {dev: [h[dev] for h in self.held] for dev in self.held[0]}
