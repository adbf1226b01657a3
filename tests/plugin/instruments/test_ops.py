"""The ``ops`` instrument on its own: ATen operator calls by operator, nothing else."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.measurement import Measurement
from pytest_torchcheck.instruments.ops import OpCounter, Ops


def test_counts_aten_operators_by_name():
    x = torch.ones(3)
    m = Measurement()
    with Ops(frozenset({"ops"})) as inst:
        ((x + 1) * 2 + 3).relu()
    inst.fill(m)
    assert dict(m.ops) == {"add": 2, "mul": 1, "relu": 1}
    assert m.cpu_peak is None and m.cpu_allocations == []  # counting does not read memory


def test_memory_sampling_names_the_largest_allocation_and_its_line():
    counter = OpCounter(count=False, memory=True)
    with counter:
        kept = torch.ones(1 << 20)  # 4 MiB, kept past the operator
    counter.finish()
    (first, *_) = counter.largest()
    assert first.op == "aten.ones" and first.size >= 4 << 20 and first.site.file == __file__
    assert counter.peak_above_start >= 4 << 20 and counter.ops == {}
    del kept
