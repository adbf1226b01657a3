"""The ``cuda_peaks`` instrument on its own, over the caching allocator's statistics (faked here: the
CPU-only machines that run the suite have no CUDA device; on one, the budget tests measure for real)."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.cuda_peaks import CudaPeaksInstrument
from pytest_torchcheck.instruments.measurement import Measurement


def test_peak_allocated_is_above_the_start_and_reserved_is_absolute(monkeypatch):
    reset = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", reset.append)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d: 1000 * (d + 1))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda d: 5000 if d == 0 else 1500)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda d: 8192 * (d + 1))
    m = Measurement()
    with CudaPeaksInstrument(frozenset({"cuda_peaks"})) as inst:
        pass
    inst.fill(m)
    assert reset == [0, 1]
    assert m.cuda_allocated == {0: 4000, 1: 0}  # device 1 freed below its start: no negative peak
    assert m.cuda_reserved == {0: 8192, 1: 16384}
