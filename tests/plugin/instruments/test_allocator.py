"""The ``cpu_memory`` instrument on its own: the peak of the region's own allocations, from torch's
allocator events, or from malloc sampled after each operator while another profiler listens."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.allocator import AllocatorPeak, CpuMemory, attribute_cpu_memory
from pytest_torchcheck.instruments.measurement import ALLOCATOR, SAMPLED, Measurement

MIB = 1 << 20


def _temporary() -> None:
    t = torch.ones(4 * MIB // 4)  # 4 MiB, freed before the region ends
    del t


def test_the_peak_counts_a_freed_temporary():
    assert AllocatorPeak.usable()
    m = Measurement()
    with CpuMemory(frozenset({"cpu_memory"})) as inst:
        _temporary()
    inst.fill(m)
    assert m.cpu_method == ALLOCATOR and not inst.again()
    assert 4 * MIB <= m.cpu_peak <= 5 * MIB
    assert m.cpu_sizes[0] == (4 * MIB, 1)


def test_under_a_running_profiler_malloc_is_sampled():
    m = Measurement()
    with torch.profiler.profile():
        assert not AllocatorPeak.usable()
        with CpuMemory(frozenset({"cpu_memory"})) as inst:
            kept = torch.ones(4 * MIB // 4)
        inst.fill(m)
    assert m.cpu_method == SAMPLED and m.cpu_peak >= 4 * MIB
    assert m.cpu_allocations[0].op == "aten.ones"
    del kept


def test_attribution_names_the_operator_and_line_once():
    held = []
    m = Measurement(cpu_peak=8 * MIB)
    attribute_cpu_memory(lambda: held.append(torch.zeros(2 * MIB)), m)  # 8 MiB
    assert m.runs == 1 and m.cpu_allocations[0].op == "aten.zeros" and m.cpu_allocations[0].site.file == __file__
    attribute_cpu_memory(lambda: held.append(torch.zeros(2 * MIB)), m)  # already named: not run again
    assert m.runs == 1 and len(held) == 1
