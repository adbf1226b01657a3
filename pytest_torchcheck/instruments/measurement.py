"""What one region measured: the record every instrument fills in and every budget check reads.

Pure Python (no torch): the types of what the instruments record are named for type checkers only.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_torchcheck.instruments.compile import CompileWatcher
    from pytest_torchcheck.instruments.ops import Allocation
    from pytest_torchcheck.instruments.sites import Site
    from pytest_torchcheck.instruments.syncs import SyncCounter

ALLOCATOR = "allocator events"
SAMPLED = "sampled after each operator"


@dataclass
class Measurement:
    """What one region measured (only the keys its budget asked for are filled in)."""

    runs: int = 0
    syncs: SyncCounter | None = None
    ops: Counter[str] | None = None
    flops: int | None = None
    flops_by_op: dict[str, int] = field(default_factory=dict)
    cpu_peak: int | None = None
    cpu_method: str = ""  # ALLOCATOR or SAMPLED
    cpu_allocations: list[Allocation] = field(default_factory=list)  # the largest, by operator and call site
    cpu_sizes: list[tuple[int, int]] = field(default_factory=list)  # the largest allocation sizes, with counts
    cpu_remeasure: bool = False  # the allocator run outgrew pybind's instance table (see allocator.py)
    cpu_graphs: list[tuple[int, Site]] = field(default_factory=list)  # autograd nodes held, by the line that made them
    cuda_allocated: dict[int, int] = field(default_factory=dict)
    cuda_reserved: dict[int, int] = field(default_factory=dict)
    growth: dict[str, list[int]] = field(default_factory=dict)  # device -> bytes held after each repeated run
    times: list[float] = field(default_factory=list)
    time_method: str = ""
    compile: CompileWatcher | None = None
    block: bool = False  # a `with` block: it ran once and cannot be run again
    # What an instrument with no field of its own recorded, by its name (an instrument added as one module).
    values: dict[str, Any] = field(default_factory=dict)

    def growth_per_run(self, device: str) -> int:
        held = self.growth[device]
        return int(statistics.median(b - a for a, b in zip(held, held[1:])))

    @property
    def time(self) -> float | None:
        return statistics.median(self.times) if self.times else None
