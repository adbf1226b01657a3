"""CPU memory: the ``cpu_memory`` instrument, the most bytes a region's own allocations held at once.

torch's CPU allocator reports each allocation to a listening profiler; where another profiler already
listens, malloc is read after each operator instead. For a failing budget, ``attribute_cpu_memory``
runs the region once more to name the largest allocations' operators and lines.
"""

from __future__ import annotations

import heapq
import os
import sys
from typing import Any, Callable, NamedTuple

import torch

from pytest_torchcheck.instruments.base import Instrument, register
from pytest_torchcheck.instruments.graph_keepers import GraphKeepers
from pytest_torchcheck.instruments.malloc import cpu_in_use
from pytest_torchcheck.instruments.measurement import ALLOCATOR, SAMPLED, Measurement
from pytest_torchcheck.instruments.ops import OpCounter


class _Legacy(NamedTuple):
    """torch's legacy profiler, configured for memory events only, and the switch of its operator callbacks."""

    config: Any
    enable: Callable[[Any], None]
    disable: Callable[[], list]
    record_function: Callable[[bool], None]
    profiler_enabled: Callable[[], bool]


def _legacy_memory_profiler() -> _Legacy | None:
    try:
        from torch.autograd import (_disable_profiler_legacy, _enable_profiler_legacy, _enable_record_function,
                                    _profiler_enabled)
        from torch._C._profiler import ProfilerConfig, ProfilerState, _ExperimentalConfig

        # CPU profiling state, memory events on; no input shapes, stacks, flops or modules.
        config = ProfilerConfig(ProfilerState.CPU, False, True, False, False, False, _ExperimentalConfig())
    except (ImportError, AttributeError, TypeError, RuntimeError):
        return None
    return _Legacy(config, _enable_profiler_legacy, _disable_profiler_legacy, _enable_record_function,
                   _profiler_enabled)


_LEGACY = _legacy_memory_profiler()
_quieted = False


def _quiet_unknown_free_warning() -> None:
    """Use up, once per process and out of sight, the warning torch prints for a free it has no size for.

    torch's CPU allocator logs "Memory block of unknown size was allocated before the profiling started" on
    the first free (and every thousandth after) of memory allocated while no profiler listened. Every region
    frees some of the caller's tensors, so the first region would print it into the test's stderr.
    """
    global _quieted
    _quieted = True
    block = torch.empty(1)
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to keep clean
        saved = None
    try:
        if saved is not None:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 2)
        _LEGACY.enable(_LEGACY.config)
        _LEGACY.record_function(False)
        del block
        for _ in range(256):  # and some events of the profiler's own, so that its first-use state is not a region's
            torch.empty(1)
        _LEGACY.record_function(True)
        _LEGACY.disable()
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


# pybind11 keeps every live bound object in one hash table (its registered instances) whose bucket array
# grows with the most objects ever alive at once and never shrinks. The legacy profiler hands back one
# bound object per memory event, all at once, so the first region with more events than any before grows
# that table by about 11 bytes per event (1.3 MB for 120,000 events), and the malloc reading at the
# region's end took that for memory the region kept: the first operator-heavy region of a process measured
# about 1.2 MiB more than the same region later. The table is grown once, up front, for this many objects,
# and a region that outgrows it is measured again (the table then fits it).
_REGISTRY_START = 1 << 16
_registry_capacity = 0


def _grow_pybind_registry(n: int) -> None:
    """Have ``n`` bound objects alive at once, so that pybind11's instance table holds that many."""
    global _registry_capacity
    from torch._C._profiler import _ExperimentalConfig

    objects = [_ExperimentalConfig() for _ in range(n)]
    del objects
    _registry_capacity = max(_registry_capacity, n)


class AllocatorPeak:
    """The most bytes a region's own allocations from torch's CPU allocator held at once.

    torch's CPU allocator reports every allocation and free to a profiler that asks for memory events, from
    inside operators too (a kernel's temporary counts). The legacy profiler is that listener here, with torch's
    operator callbacks (RecordFunction) switched off for the region: nothing is recorded per operator, one
    event per allocation, so the cost does not grow with the number of operators. The events carry sizes but
    no pointers, so a free counts only when the region allocated a block of that size that is still held: the
    caller's memory freed inside the region neither counts nor goes below zero.

    Native allocations outside torch's allocator are seen through malloc's in-use bytes at the region's two
    ends: the peak is at least what the region still holds at its end.
    """

    def __init__(self) -> None:
        self.peak = 0
        self.largest: list[tuple[int, int]] = []
        self.outgrew_registry = False  # more events than pybind's table held: the malloc reading is off

    @staticmethod
    def usable() -> bool:
        """False where this torch lacks the hooks, or a profiler is already running (only one can be)."""
        return _LEGACY is not None and cpu_in_use is not None and not _LEGACY.profiler_enabled()

    def __enter__(self) -> AllocatorPeak:
        if not _quieted:
            _quiet_unknown_free_warning()
        if _registry_capacity < _REGISTRY_START:
            _grow_pybind_registry(_REGISTRY_START)
        self.malloc_start = cpu_in_use()
        _LEGACY.enable(_LEGACY.config)
        _LEGACY.record_function(False)
        return self

    def __exit__(self, *exc: Any) -> None:
        _LEGACY.record_function(True)  # torch's default; it has no getter to restore a caller's own setting
        per_thread = _LEGACY.disable()
        held = peak = 0
        live: dict[int, int] = {}  # size -> blocks of that size the region allocated and still holds
        sizes: dict[int, int] = {}  # size -> blocks of that size the region allocated
        ordered = per_thread[0] if len(per_thread) == 1 else sorted(
            (e for events in per_thread for e in events), key=lambda e: e.start_us())
        for e in ordered:
            size = e.cpu_memory_usage()
            if size > 0:
                live[size] = live.get(size, 0) + 1
                sizes[size] = sizes.get(size, 0) + 1
                held += size
                if held > peak:
                    peak = held
            elif size < 0 and live.get(-size):
                live[-size] -= 1
                held += size
        events = sum(len(t) for t in per_thread)
        del per_thread, ordered
        global _registry_capacity
        self.outgrew_registry = events > _registry_capacity
        if self.outgrew_registry:
            _registry_capacity = events
            self.peak = peak  # the end reading holds pybind's grown table: the caller measures again
        else:
            self.peak = max(peak, cpu_in_use() - self.malloc_start)
        self.largest = [(size, sizes[size]) for size in heapq.nlargest(8, sizes)]  # (bytes, how many)


@register
class CpuMemory(Instrument):
    NAME = "cpu_memory"
    WHAT = "peak CPU memory of the region's own allocations (torch's allocator events, or malloc sampled)"
    ORDER = 30

    def start(self) -> None:
        self.allocator: AllocatorPeak | None = None
        self.sampler: OpCounter | None = None
        if AllocatorPeak.usable():
            self.allocator = AllocatorPeak().__enter__()
        else:  # a profiler was already running: sample malloc after each operator
            self.sampler = OpCounter(count=False, memory=True)
            self.sampler.__enter__()

    def stop(self) -> None:
        if self.allocator is not None:
            self.allocator.__exit__(None, None, None)
        else:
            try:
                self.sampler.finish()
            finally:
                self.sampler.__exit__(None, None, None)

    def again(self) -> bool:
        # The first region this heavy in the process: once more, for a clean reading.
        return self.allocator is not None and self.allocator.outgrew_registry

    def fill(self, m: Measurement) -> None:
        if self.allocator is not None:
            m.cpu_peak = self.allocator.peak
            m.cpu_sizes = self.allocator.largest
            m.cpu_method = ALLOCATOR
            m.cpu_remeasure = self.allocator.outgrew_registry
        else:
            m.cpu_peak = self.sampler.peak_above_start
            m.cpu_allocations = self.sampler.largest()
            m.cpu_method = SAMPLED


def attribute_cpu_memory(fn: Callable[[], Any], m: Measurement) -> None:
    """Run ``fn`` once more, malloc read after every operator, to name the largest allocations and their lines.

    The measured run records sizes only (that is what keeps it cheap); this run, made only for a failing
    budget, pays the per-operator cost to say which operator and which line of the test allocated.
    """
    if m.cpu_allocations or cpu_in_use is None:
        return
    counter = OpCounter(count=False, memory=True)
    keepers = GraphKeepers()
    with counter, keepers:
        fn()
    counter.finish()
    m.runs += 1
    m.cpu_allocations = counter.largest()
    m.cpu_graphs = keepers.largest
