"""Failure messages: measured against limit with units, where, the top contributors, the cause, the fix."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from pytest_torchcheck.budgets import units
from pytest_torchcheck.budgets.spec import KEYS, LIMITS, Budget
from pytest_torchcheck.errors import TorchcheckFailure
from pytest_torchcheck.instruments.measurement import ALLOCATOR, Measurement
from pytest_torchcheck.instruments.sites import short_path

TOP = 5


@dataclass(frozen=True)
class Where:
    test_id: str
    region: str
    rank: int | None
    device: str

    def __str__(self) -> str:
        rank = f"rank {self.rank}, " if self.rank is not None else ""
        return f"region {self.region!r} of {self.test_id} ({rank}device {self.device})"


def current_rank() -> int | None:
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    rank = os.environ.get("RANK")
    return int(rank) if rank is not None and rank.isdigit() else None


def current_device() -> str:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def _fmt(key: str, value: float) -> str:
    unit = KEYS[key].unit
    if unit == "bytes":
        return units.format_bytes(value)
    if unit == "seconds":
        return units.format_time(value)
    if unit == "flops":
        return units.format_count(value, "FLOP")
    return str(int(value))


@dataclass
class Violation:
    key: str
    headline: str  # "syncs 3 > limit 0"
    lines: list[str]
    change: str = ""  # how to change this limit, when it was not set by a budget key


def _syncs(key: str, m: Measurement, limit: int) -> Violation | None:
    total = m.syncs.total
    if total <= limit:
        return None
    lines = [f"syncs: {total} host-device synchronisation(s), limit {limit}; call sites:"]
    for (what, site), n in sorted(m.syncs.sites.items(), key=lambda kv: (-kv[1], str(kv[0][1]))):
        lines.append(f"  {n}x {what} at {site}")
    lines.append("  likely cause: a value read back to the host in the region (.item(), .cpu(), .tolist(), printing, "
                 "nonzero, a boolean mask, a tensor in an `if`); keep it on the device (loss.detach()) and read it "
                 "only when logging. A CPU tensor counts as the device tensor it is in a GPU run; torch's "
                 "reads of host tensors (optimizer step counters, samplers) and of host scalars do not count.")
    return Violation(key, f"{key} {total} > limit {limit}", lines)


def _ops(key: str, m: Measurement, limit: int) -> Violation | None:
    total = sum(m.ops.values())
    if total <= limit:
        return None
    top = ", ".join(f"aten.{op} {n}" for op, n in m.ops.most_common(TOP))
    return Violation(key, f"{key} {total} > limit {limit}", [
        f"ops: {total} ATen operator calls, limit {limit}; top operators: {top}",
        "  likely cause: more kernel launches: a Python loop over elements or layers, an extra forward, "
        "an unfused elementwise chain, or a new operator in the step"])


def _flops(key: str, m: Measurement, limit: int) -> Violation | None:
    if m.flops <= limit:
        return None
    ranked = sorted(m.flops_by_op.items(), key=lambda kv: -kv[1])[:TOP]
    top = ", ".join(f"{op} {units.format_count(n, 'FLOP')}" for op, n in ranked) or "(none counted)"
    return Violation("flops", f"flops {_fmt('flops', m.flops)} > limit {_fmt('flops', limit)}", [
        f"flops: {_fmt('flops', m.flops)} ({m.flops:,}), limit {_fmt('flops', limit)}; top operators: {top}",
        "  likely cause: larger matmuls/convolutions than intended (a wider layer, a longer sequence, "
        "a forward run twice)"])


#: A result holding at least this many autograd nodes when the region returns is named as keeping a graph
#: (one training step of a small model makes about ten; a kept loss adds a step's worth every step).
GRAPH_KEPT_NODES = 200


def _cpu_memory(key: str, m: Measurement, limit: int) -> Violation | None:
    if m.cpu_peak <= limit:
        return None
    head = (f"cpu_memory: peak {_fmt('cpu_memory', m.cpu_peak)} above the region's start on cpu, "
            f"limit {_fmt('cpu_memory', limit)};")
    if not m.cpu_allocations and m.block and m.cpu_method == ALLOCATOR:
        sizes = ", ".join(units.format_bytes(size) + (f" x{n}" if n > 1 else "") for size, n in m.cpu_sizes[:TOP])
        lines = [f"{head} largest allocations: {sizes or '(none)'}",
                 "  (sizes only: a `with` block runs once, so its allocations are not traced to operators; pass "
                 "the region as a function, budget(fn, cpu_memory=...), or mark the test "
                 "@pytest.mark.budget(cpu_memory=...), to see each one's operator and line)"]
    else:
        how = " (one more run of the region, malloc read after each operator)" if m.cpu_method == ALLOCATOR else ""
        lines = [f"{head} largest allocations by an operator{how}:"]
        same = Counter((a.size, a.op, a.site) for a in m.cpu_allocations)  # one line for repeats of one line
        lines += [f"  {f'{n}x ' if n > 1 else ''}{units.format_bytes(size)} by {op} at {site}"
                  for (size, op, site), n in sorted(same.items(), key=lambda kv: -kv[0][0])[:TOP]]
        if not m.cpu_allocations:
            lines.append("  (no single operator allocated 64 KiB or more: many small allocations, or memory "
                         "allocated outside torch operators)")
    kept = [(n, site) for n, site in m.cpu_graphs if n >= GRAPH_KEPT_NODES]
    if kept:
        n, site = kept[0]
        lines.append(f"  kept with its graph: `{site.source}` at {short_path(site.file)}:{site.line} holds {n:,} "
                     "autograd nodes when the region returns (every step's graph: its saved tensors until backward, "
                     "its nodes after); accumulate loss.detach() or loss.item() instead")
    lines.append("  likely cause: a full-size temporary (a dense one-hot, a copy, an expand(...).contiguous()), "
                 "activations kept for backward that are not needed, or a larger batch")
    return Violation("cpu_memory", f"cpu_memory {_fmt('cpu_memory', m.cpu_peak)} > limit "
                                   f"{_fmt('cpu_memory', limit)}", lines)


def _cuda(key: str, m: Measurement, limit: int) -> Violation | None:
    spec = LIMITS[key]  # which per-device peaks, and their words, are the key's declaration
    values = getattr(m, spec.reads)
    over = {d: v for d, v in values.items() if v > limit}
    if not over:
        return None
    lines = [f"{key}: {spec.noun}, limit {_fmt(key, limit)} per device:"]
    lines += [f"  cuda:{d}: {_fmt(key, v)}" + ("  <- over" if d in over else "") for d, v in sorted(values.items())]
    lines.append(f"  likely cause: {spec.hint}")
    worst = max(over.values())
    return Violation(key, f"{key} {_fmt(key, worst)} > limit {_fmt(key, limit)}", lines)


def _growth(key: str, m: Measurement, limit: int) -> Violation | None:
    per = {dev: m.growth_per_run(dev) for dev in m.growth}
    over = {dev: g for dev, g in per.items() if g > limit}
    if not over:
        return None
    lines = [f"memory_growth: memory still held after each run grows by (median over {len(next(iter(m.growth.values()))) - 1}"
             f" repeated runs), limit {_fmt('memory_growth', limit)} per run:"]
    for dev, held in m.growth.items():
        steps = ", ".join("+" + units.format_bytes(b - a) if b >= a else units.format_bytes(b - a)
                          for a, b in zip(held, held[1:]))
        lines.append(f"  {dev}: {units.format_bytes(per[dev])} per run (after each run: {steps})"
                     + ("  <- over" if dev in over else ""))
    lines.append("  likely cause: something outlives each run: a loss accumulated with its autograd graph "
                 "(total += loss; accumulate loss.detach()), outputs appended to a list, a growing cache")
    worst = max(over.values())
    return Violation("memory_growth", f"memory_growth {_fmt('memory_growth', worst)}/run > limit "
                                      f"{_fmt('memory_growth', limit)}", lines)


def _time(key: str, m: Measurement, limit: float) -> Violation | None:
    t = m.time
    if t <= limit:
        return None
    return Violation("time", f"time {_fmt('time', t)} > limit {_fmt('time', limit)}", [
        f"time: median {_fmt('time', t)} of {len(m.times)} runs ({m.time_method}; min {_fmt('time', min(m.times))}, "
        f"max {_fmt('time', max(m.times))}), limit {_fmt('time', limit)}",
        "  note: wall-clock limits depend on the machine and its load; a per-machine baseline "
        "(--torchcheck-baseline-save/--torchcheck-baseline-compare) compares like with like"])


def _compile(key: str, m: Measurement, limit: int) -> Violation | None:
    spec = LIMITS[key]  # which events the compile watcher recorded, and their words, are the key's declaration
    w = m.compile
    events = getattr(w, spec.reads)
    count = w.count(spec.reads)
    if count <= limit:
        return None
    lines = [f"{key}: {count} {spec.noun} under torch.compile, limit {limit}:"]
    lines += [f"  {i}. {e.location}: {e.reason}" for i, e in enumerate(events[:10], 1)]
    lines.append(f"  likely cause: {spec.hint}")
    return Violation(key, f"{key} {count} > limit {limit}", lines)


# What budgets.spec's keys name as their check (Key.check): (key, measurement, limit) -> a violation or None.
CHECKS: dict[str, Callable[[str, Measurement, object], Violation | None]] = {
    "syncs": _syncs, "ops": _ops, "flops": _flops, "cpu_memory": _cpu_memory, "cuda_memory": _cuda,
    "memory_growth": _growth, "time": _time, "compile": _compile,
}


def _instrument_check(key: str, m: Measurement, limit: object) -> Violation | None:
    """A key with no shared check is checked by its instrument's own ``check``."""
    from pytest_torchcheck.instruments import registry

    found = registry.get(LIMITS[key].instrument).check(key, m, limit)
    return None if found is None else Violation(key, *found)


def violations(budget: Budget, m: Measurement) -> list[Violation]:
    return [v for key, limit in budget.limits.items()
            if (v := CHECKS.get(LIMITS[key].check, _instrument_check)(key, m, limit)) is not None]


def check(budget: Budget, m: Measurement, where: Where, extra: list[Violation] = ()) -> None:
    """Raise TorchcheckFailure naming every exceeded limit; returns when all hold."""
    __tracebackhide__ = True
    found = violations(budget, m) + list(extra)
    if not found:
        return
    lines = [f"budget exceeded: {'; '.join(v.headline for v in found)} in {where}"]
    for v in found:
        lines += ["  " + ln for ln in v.lines]
    changes = [f"{v.key} was set by {budget.sources[v.key]}" for v in found if v.key in budget.sources]
    if changes:
        lines.append(f"  to change a limit, edit it where it was set ({'; '.join(changes)})")
    lines += [f"  {v.change}" for v in found if v.change]
    raise TorchcheckFailure("\n".join(lines), "budget")
