#!/usr/bin/env python
"""What does the NaN/Inf guard cost a training step, next to torch's detect_anomaly?

Times one training step -- forward, loss, backward, ``optimizer.step()``,
``optimizer.zero_grad()`` -- of two small models, and measures, side by side in
one run, the same step

- unguarded;
- inside ``NanGuard()`` (``pytest_torchcheck.anomaly``: forward and backward
  hooks, what ``@pytest.mark.nan_guard`` and the ``nan_guard`` fixture install;
  target: at most 1.3x the unguarded step);
- inside ``NanGuard(backward=False)`` (forward output checks only);
- inside ``torch.autograd.detect_anomaly()`` (autograd's anomaly mode, for
  comparison; no target);
- inside a fresh ``NanGuard()`` entered and left around every single step
  (set-up and tear-down included; for information).

Models (float32, CPU, ``torch.manual_seed(0)``):

- mlp: Linear(512,512)-ReLU-Linear(512,512)-ReLU-Linear(512,512)-ReLU-Linear(512,10)
  in an nn.Sequential, batch 128, cross-entropy loss on random labels;
- transformer: nn.TransformerEncoderLayer(d_model=256, nhead=4,
  dim_feedforward=1024, batch_first=True) in training mode (dropout 0.1, its
  default), batch 16, sequence 64, MSE loss against a random target.

Both use plain SGD (lr 1e-3), the cheapest optimizer step and so the strictest
ratio. torch runs with a fixed intra-op thread count (``--threads``, default 1)
to cut noise on a small shared machine.

Every mode runs a block of ``--steps`` steps per round, the modes interleaved
(the order rotated from round to round) so that machine noise hits every mode
alike; every step is timed on its own, and the median step time over all rounds
is reported. The script exits 0 whether or not the target is met (it is a
benchmark, not a test) and 2 only when it could not measure at all.  See
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import importlib.metadata
import io
import math
import os
import platform
import pstats
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pytest_torchcheck.anomaly import NanGuard
from _report import table, verdict, write_json  # a sibling module: benchmarks/ is on sys.path when run as a script

GUARD_TARGET = 1.3  # guarded step time / unguarded step time, at most
ANOMALY_PY = "pytest_torchcheck/anomaly.py"

# mode name -> (label, context factory or None, entered per step)
MODES: dict[str, tuple[str, Callable[[], Any], bool]] = {
    "unguarded": ("unguarded", contextlib.nullcontext, False),
    "nan_guard": ("NanGuard()", NanGuard, False),
    "nan_guard_fwd": ("NanGuard(backward=False)", lambda: NanGuard(backward=False), False),
    "detect_anomaly": ("torch.autograd.detect_anomaly()", torch.autograd.detect_anomaly, False),
    "nan_guard_per_step": ("NanGuard() entered per step", NanGuard, True),
}


# ------------------------------------------------------------------ models
@dataclass
class Workload:
    name: str
    description: str
    model: nn.Module
    step: Callable[[], torch.Tensor]  # one training step; returns the (detached) loss


def make_mlp() -> Workload:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(512, 512), nn.ReLU(),
        nn.Linear(512, 512), nn.ReLU(),
        nn.Linear(512, 512), nn.ReLU(),
        nn.Linear(512, 10),
    )
    x = torch.randn(128, 512)
    y = torch.randint(0, 10, (128,))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    n = sum(p.numel() for p in model.parameters())
    return Workload("mlp", f"4x Linear (512-512-512-512-10) + ReLU, batch 128, cross-entropy; {n:,} parameters",
                    model, step)


def make_transformer() -> Workload:
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    model.train()
    x = torch.randn(16, 64, 256)
    target = torch.randn(16, 64, 256)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    def step() -> torch.Tensor:
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    n = sum(p.numel() for p in model.parameters())
    return Workload("transformer", f"TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, "
                                   f"batch_first=True), train mode, batch 16 x seq 64, MSE; {n:,} parameters",
                    model, step)


WORKLOADS = {"mlp": make_mlp, "transformer": make_transformer}


# ----------------------------------------------------------------- timing
class Broken(Exception):
    pass


def run_block(w: Workload, mode: str, steps: int, out: list[float] | None) -> None:
    """``steps`` steps under ``mode``; appends each step's seconds to ``out``."""
    _, factory, per_step = MODES[mode]
    perf = time.perf_counter
    if per_step:
        for _ in range(steps):
            t0 = perf()
            with factory() as guard:
                loss = w.step()
            dt = perf() - t0
            if out is not None:
                out.append(dt)
            check(w, mode, guard, loss)
        return
    with factory() as guard:
        for _ in range(steps):
            t0 = perf()
            loss = w.step()
            dt = perf() - t0
            if out is not None:
                out.append(dt)
            check(w, mode, guard, loss)


def check(w: Workload, mode: str, guard: Any, loss: torch.Tensor) -> None:
    if isinstance(guard, NanGuard):
        if guard.failure is not None:
            raise Broken(f"{w.name}/{mode}: the guard reported a failure: {guard.failure}")
        if guard.checked_modules == 0:
            raise Broken(f"{w.name}/{mode}: the guard checked no module (hooks not installed?)")
    if not math.isfinite(float(loss)):
        raise Broken(f"{w.name}/{mode}: the loss is not finite ({float(loss)})")


def measure(workloads: list[Workload], modes: list[str], rounds: int, steps: int, warmup: int,
            log) -> dict[str, dict[str, list[float]]]:
    samples = {w.name: {m: [] for m in modes} for w in workloads}
    round_medians = {w.name: {m: [] for m in modes} for w in workloads}
    for w in workloads:  # warm-up: allocator, kernels' first calls, hooks' first calls
        for m in modes:
            run_block(w, m, warmup, None)
    for i in range(rounds):
        k = i % len(modes)
        order = modes[k:] + modes[:k]
        if i % 2:
            order = order[::-1]
        for w in workloads:
            for m in order:
                block: list[float] = []
                gc.collect()
                run_block(w, m, steps, block)
                samples[w.name][m].extend(block)
                round_medians[w.name][m].append(statistics.median(block))
        log(f"  round {i + 1}/{rounds}: " + "; ".join(
            f"{w.name} " + " ".join(f"{m} {round_medians[w.name][m][-1] * 1e3:.2f}" for m in modes)
            for w in workloads) + " (ms/step)")
    return {"samples": samples, "round_medians": round_medians}


# ---------------------------------------------------------------- profile
def short(func: tuple) -> str:
    """A pstats function key as ``file.py:line(name)``, or the built-in's name."""
    path, line, name = func
    if path == "~":
        return name
    return f"{Path(path).name}:{line}({name})"


def profile_guarded(w: Workload, steps: int, top: int) -> tuple[str, dict]:
    """cProfile of ``steps`` guarded steps; where the time inside anomaly.py goes."""
    with NanGuard():  # warm
        for _ in range(5):
            w.step()
    prof = cProfile.Profile()
    with NanGuard():
        prof.enable()
        for _ in range(steps):
            w.step()
        prof.disable()
    st = pstats.Stats(prof)
    total = st.total_tt
    rows = []
    for func, (cc, nc, tt, ct, callers) in st.stats.items():
        if func[0].replace(os.sep, "/").endswith(ANOMALY_PY):
            rows.append({"function": f"{func[2]} (anomaly.py:{func[1]})", "calls": nc,
                         "own_s": tt, "cum_s": ct, "own_share": tt / total, "cum_share": ct / total})
    rows.sort(key=lambda r: -r["cum_s"])
    # what anomaly.py calls outside itself (torch ops, hook registration, ...), charged to its callers there
    callees: dict[str, dict] = {}
    for func, (cc, nc, tt, ct, callers) in st.stats.items():
        if func[0].replace(os.sep, "/").endswith(ANOMALY_PY):
            continue
        for caller, cstat in callers.items():
            if not caller[0].replace(os.sep, "/").endswith(ANOMALY_PY):
                continue
            c_nc, c_tt, c_ct = cstat[1], cstat[2], cstat[3]
            key = f"{short(func)}  <- {caller[2]}"
            e = callees.setdefault(key, {"callee": key, "calls": 0, "own_s": 0.0, "cum_s": 0.0})
            e["calls"] += c_nc
            e["own_s"] += c_tt
            e["cum_s"] += c_ct
    callee_rows = sorted(callees.values(), key=lambda r: -r["cum_s"])
    for r in callee_rows:
        r["cum_share"] = r["cum_s"] / total
    buf = io.StringIO()
    buf.write(f"  {w.name}: {steps} guarded steps under cProfile, {total * 1e3 / steps:.2f} ms/step profiled "
              f"(cProfile inflates Python-level cost)\n")
    buf.write("  functions in pytest_torchcheck/anomaly.py, by cumulative time (share of the profiled step):\n")
    buf.write(table([["function", "calls/step", "own ms/step", "cum ms/step", "own %", "cum %"]] + [
        [r["function"], f"{r['calls'] / steps:.0f}", f"{r['own_s'] * 1e3 / steps:.3f}",
         f"{r['cum_s'] * 1e3 / steps:.3f}", f"{100 * r['own_share']:.1f}", f"{100 * r['cum_share']:.1f}"]
        for r in rows[:top]], {1, 2, 3, 4, 5}) + "\n")
    buf.write("  what those functions call outside anomaly.py (callee <- caller), by cumulative time:\n")
    buf.write(table([["callee <- caller in anomaly.py", "calls/step", "cum ms/step", "cum %"]] + [
        [r["callee"], f"{r['calls'] / steps:.0f}", f"{r['cum_s'] * 1e3 / steps:.3f}",
         f"{100 * r['cum_share']:.1f}"] for r in callee_rows[:top]], {1, 2, 3}) + "\n")
    buf.write("  overall, by own time:\n")
    sbuf = io.StringIO()
    pstats.Stats(prof, stream=sbuf).sort_stats("tottime").print_stats(top)
    text = sbuf.getvalue()
    start = text.find("   ncalls")
    buf.write("\n".join("    " + line for line in text[start:].rstrip().splitlines()) + "\n")
    return buf.getvalue(), {"steps": steps, "profiled_s_per_step": total / steps, "anomaly_functions": rows,
                            "anomaly_callees": callee_rows[:top]}


# ----------------------------------------------------------------- report
def stat(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return {"median": statistics.median(xs), "p25": q[0], "p75": q[2], "min": min(xs), "max": max(xs),
            "n": len(xs)}






def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="mlp,transformer",
                    help="comma-separated workloads (default: mlp,transformer)")
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds (default 20)")
    ap.add_argument("--steps", type=int, default=15, help="timed steps per mode per round (default 15)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps per mode before timing (default 10)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers to this JSON file")
    ap.add_argument("--profile", action="store_true",
                    help="also print a cProfile of the NanGuard() step: its hot spots in anomaly.py")
    ap.add_argument("--profile-steps", type=int, default=50, help="guarded steps under cProfile (default 50)")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress lines, only the report")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.steps < 1 or args.threads < 1 or args.warmup < 0:
        ap.error("--rounds, --steps and --threads must be at least 1, --warmup at least 0")
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        ap.error(f"unknown model(s) {unknown}; choose from {', '.join(WORKLOADS)}")

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    warnings.filterwarnings("ignore", message="Anomaly Detection has been enabled")
    torch.set_num_threads(args.threads)
    machine = {
        "platform": platform.platform(),
        "processor": platform.processor() or None,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torchcheck": importlib.metadata.version("pytest-torchcheck"),
        "loadavg_1m_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    workloads = [WORKLOADS[n]() for n in names]
    modes = list(MODES)
    log(f"torch threads: {torch.get_num_threads()}; warm-up {args.warmup} steps per mode, then "
        f"{args.rounds} interleaved rounds of {args.steps} steps per mode ...")
    try:
        m = measure(workloads, modes, args.rounds, args.steps, args.warmup, log)
    except Broken as e:
        print(f"nan_guard_overhead: error: {e}", file=sys.stderr)
        return 2
    if hasattr(os, "getloadavg"):
        machine["loadavg_1m_after"] = os.getloadavg()[0]

    result: dict = {"machine": machine, "rounds": args.rounds, "steps_per_round": args.steps,
                    "warmup_steps": args.warmup,
                    "statistic": "median of per-step times over all rounds; ratios are ratios of medians; "
                                 "paired: median over rounds of the per-round median ratio",
                    "workloads": [], "targets": {}}
    for w in workloads:
        s, rm = m["samples"][w.name], m["round_medians"][w.name]
        base = statistics.median(s["unguarded"])
        entry = {"name": w.name, "description": w.description, "modes": {}}
        for mode in modes:
            e = stat(s[mode])
            e["label"] = MODES[mode][0]
            e["ratio"] = e["median"] / base
            e["paired_ratio"] = statistics.median(a / b for a, b in zip(rm[mode], rm["unguarded"]))
            entry["modes"][mode] = e
        result["workloads"].append(entry)
        r = entry["modes"]["nan_guard"]["ratio"]
        result["targets"][f"{w.name}: NanGuard()/unguarded"] = {"value": r, "max": GUARD_TARGET,
                                                                "pass": r <= GUARD_TARGET}

    # ---- report
    print()
    print("torchcheck nan guard overhead (one training step: forward, loss, backward, SGD step, zero_grad)")
    print(f"machine: {machine['platform']}, {machine['cpus']} CPUs; Python {machine['python']}, "
          f"torch {machine['torch']}, torch threads: {machine['torch_threads']} (torch.set_num_threads)")
    if machine.get("loadavg_1m_before") is not None:
        print(f"load average (1 min) before/after: {machine['loadavg_1m_before']:.2f} / "
              f"{machine['loadavg_1m_after']:.2f}  (other work on the machine adds noise)")
    print(f"timing: {args.warmup} warm-up steps per mode, then {args.rounds} interleaved rounds x {args.steps} "
          f"steps per mode; median per-step time [p25-p75] over {args.rounds * args.steps} steps")
    for e in result["workloads"]:
        print()
        print(f"{e['name']}: {e['description']}")
        rows = [["mode", "ms/step [p25-p75]", "x unguarded", "paired"]]
        for mode, s in e["modes"].items():
            rows.append([s["label"], f"{s['median'] * 1e3:.3f} [{s['p25'] * 1e3:.3f}-{s['p75'] * 1e3:.3f}]",
                         f"{s['ratio']:.2f}x", f"{s['paired_ratio']:.2f}x"])
        print(table(rows, {1, 2, 3}))
        g, f = e["modes"]["nan_guard"], e["modes"]["nan_guard_fwd"]
        print(f"  target: NanGuard() <= {GUARD_TARGET}x unguarded:  {g['ratio']:.2f}x  ->  "
              f"{verdict(g['ratio'] <= GUARD_TARGET)}   (backward=False: {f['ratio']:.2f}x, "
              f"{verdict(f['ratio'] <= GUARD_TARGET)} against the same bound; "
              f"detect_anomaly: {e['modes']['detect_anomaly']['ratio']:.2f}x)")
    print()
    met = all(t["pass"] for t in result["targets"].values())
    print("summary: " + "; ".join(
        f"{e['name']} NanGuard {e['modes']['nan_guard']['ratio']:.2f}x (<= {GUARD_TARGET}x) "
        f"{verdict(e['modes']['nan_guard']['ratio'] <= GUARD_TARGET)}, "
        f"detect_anomaly {e['modes']['detect_anomaly']['ratio']:.2f}x" for e in result["workloads"])
          + (" -- all targets met" if met else " -- NOT all targets met"))

    if args.profile:
        print()
        print("profile: cProfile of the NanGuard() step")
        result["profile"] = {}
        for w in workloads:
            text, data = profile_guarded(w, args.profile_steps, 15)
            print(text)
            result["profile"][w.name] = data

    if args.json:
        for w in result["workloads"]:  # the raw samples too
            for mode in w["modes"]:
                w["modes"][mode]["samples"] = m["samples"][w["name"]][mode]
        write_json(args.json, result, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
