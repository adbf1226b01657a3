"""Measuring a region: warm-up, one instrumented run, repeats; what measures is in ``pytest_torchcheck.instruments``.

Imported only by tests that use a budget (the instruments import torch).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from pytest_torchcheck.instruments import registry
from pytest_torchcheck.instruments.allocator import attribute_cpu_memory
from pytest_torchcheck.instruments.base import REGION, REPEATS, RUN, Instrument
from pytest_torchcheck.instruments.compile import CompileWatcher
from pytest_torchcheck.instruments.cuda_peaks import cuda_available
from pytest_torchcheck.instruments.malloc import CPU_MEMORY_UNAVAILABLE, cpu_in_use
from pytest_torchcheck.instruments.measurement import ALLOCATOR, SAMPLED, Measurement
from pytest_torchcheck.instruments.ops import OpCounter
from pytest_torchcheck.instruments.sites import short_path

__all__ = ["ALLOCATOR", "CPU_MEMORY_UNAVAILABLE", "INSTRUMENTS", "SAMPLED", "CompileWatcher", "Measurement",
           "OpCounter", "attribute_cpu_memory", "cpu_in_use", "cuda_available", "instruments", "measure_block",
           "measure_function", "short_path"]

# What budgets.spec's keys name as their instrument (Key.instrument): the package's own instruments; a
# test holds the two in step.
INSTRUMENTS = frozenset(name for name, cls in registry.load().items()
                        if cls.__module__.startswith("pytest_torchcheck.instruments."))


def _needed(keys: set[str], timed: bool = False) -> frozenset[str]:
    from pytest_torchcheck.budgets.spec import instruments as needed

    return needed(keys) | ({"timer"} if timed else frozenset())


@contextlib.contextmanager
def _started(need: frozenset[str], scope: str, m: Measurement) -> Iterator[list[Instrument]]:
    """The instruments of ``scope`` among ``need``, started outermost first around the body, then filled into ``m``."""
    with contextlib.ExitStack() as stack:
        started = [stack.enter_context(cls(need)) for cls in registry.select(need, scope)]
        yield started
    for inst in started:  # only after a body that completed
        inst.fill(m)


@contextlib.contextmanager
def instruments(keys: set[str], m: Measurement) -> Iterator[None]:
    """The counters the limits ``keys`` need, around one run; results land in ``m``."""
    with _started(_needed(keys), RUN, m):
        yield


def measure_function(fn: Callable[[], Any], keys: set[str], warmup: int, repeats: int, timed: bool) -> Measurement:
    """``warmup`` plain runs, one instrumented run, then ``repeats`` runs for time and memory growth."""
    __tracebackhide__ = True
    need = _needed(keys, timed)
    m = Measurement()
    with _started(need, REGION, m):  # compile events count in every run
        for _ in range(warmup):
            fn()
            m.runs += 1
        with _started(need, RUN, m) as measured:
            fn()
        m.runs += 1
        for inst in measured:
            if inst.again():  # its reading was disturbed: one more run, measured by it alone
                with type(inst)(need) as fresh:
                    fn()
                m.runs += 1
                fresh.fill(m)
        if registry.select(need, REPEATS):
            with _started(need, REPEATS, m) as each:
                call = fn
                for inst in reversed(each):  # the first listed is the outermost
                    call = inst.wrap(call)
                for _ in range(repeats):
                    call()
                    m.runs += 1
    return m


@contextlib.contextmanager
def measure_block(keys: set[str]) -> Iterator[Measurement]:
    """One run of a ``with`` block (no warm-up, no repeats)."""
    need = _needed(keys)
    m = Measurement(block=True)
    with _started(need, REGION, m), _started(need, RUN, m):
        yield m
    m.runs = 1
