"""CUDA memory: the ``cuda_peaks`` instrument reads the caching allocator's peak statistics per device."""

from __future__ import annotations

from typing import Any

import torch

from pytest_torchcheck.instruments.base import Instrument, register
from pytest_torchcheck.instruments.measurement import Measurement


def cuda_available() -> bool:
    return torch.cuda.is_available()


class CudaPeaks:
    """Peak allocated (above the start) and peak reserved per device, from the caching allocator's statistics."""

    def __init__(self) -> None:
        self.devices = list(range(torch.cuda.device_count()))
        self.start: dict[int, int] = {}
        self.allocated: dict[int, int] = {}
        self.reserved: dict[int, int] = {}

    def __enter__(self) -> CudaPeaks:
        for d in self.devices:
            torch.cuda.reset_peak_memory_stats(d)
            self.start[d] = torch.cuda.memory_allocated(d)
        return self

    def __exit__(self, *exc: Any) -> None:
        for d in self.devices:
            self.allocated[d] = max(0, torch.cuda.max_memory_allocated(d) - self.start[d])
            self.reserved[d] = torch.cuda.max_memory_reserved(d)


@register
class CudaPeaksInstrument(Instrument):
    NAME = "cuda_peaks"
    WHAT = "peak CUDA memory allocated (above the start) and reserved, per device"
    ORDER = 20

    def start(self) -> None:
        self.peaks = CudaPeaks().__enter__()

    def stop(self) -> None:
        self.peaks.__exit__(None, None, None)

    def fill(self, m: Measurement) -> None:
        m.cuda_allocated, m.cuda_reserved = self.peaks.allocated, self.peaks.reserved
