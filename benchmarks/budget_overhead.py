#!/usr/bin/env python
"""What does measuring a budget cost a small training step?

Times one training step -- forward, cross-entropy, backward, ``optimizer.step()``,
``optimizer.zero_grad()`` -- of a small MLP (Linear 512-512-512-10 with ReLU,
batch 128, SGD, float32 on CPU), side by side in one run:

- unmeasured;
- inside the instruments a budget installs for one run, entered and left around
  every step (``pytest_torchcheck.budgets.measure.instruments``): ``syncs``
  (a TorchFunctionMode), ``ops`` (a TorchDispatchMode), ``syncs`` + ``ops``,
  ``cpu_memory`` (torch's CPU allocator events through the legacy profiler, operator
  callbacks off), ``memory_growth`` (the bytes held, read after each repeated run),
  and, for information, ``flops`` (torch's FlopCounterMode) and ``cpu_memory
  sampled`` (the dispatch mode reading malloc's in-use bytes after every operator:
  cpu_memory's fallback under a running profiler, and the extra run that names the
  largest allocations of a failing budget).

Targets (issue 6): syncs/ops at most 1.5x the unmeasured step, a memory budget at
most 1.2x. The modes are interleaved round by round (order rotated) so machine
noise hits all alike; the median per-step time over all rounds is reported. torch
runs with one intra-op thread (``--threads``). Exits 0 whether or not targets are
met (a benchmark, not a test), 2 when it could not measure.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

from pytest_torchcheck.budgets.measure import Measurement, OpCounter, instruments
from pytest_torchcheck.instruments.held_memory import memory_held
from _report import table, verdict, write_json  # a sibling module: benchmarks/ is on sys.path when run as a script

MODES = {  # name -> (budget keys, target ratio or None)
    "unmeasured": (set(), None),
    "syncs": ({"syncs"}, 1.5),
    "ops": ({"ops"}, 1.5),
    "syncs+ops": ({"syncs", "ops"}, 1.5),
    "cpu_memory": ({"cpu_memory"}, 1.2),
    "memory_growth": ({"memory_growth"}, 1.2),
    "flops": ({"flops"}, None),
    "cpu_memory sampled": ({"cpu_memory sampled"}, None),
}


def make_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> None:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def run_block(step, keys: set[str], n: int, out: list[float] | None) -> Measurement:
    if keys == {"memory_growth"}:
        # As measure_function does once per region: one full collection, then the objects that existed
        # before are frozen out of the per-run collections (this one-time cost is not in the per-step time).
        gc.collect()
        gc.freeze()
        try:
            return _run_block(step, keys, n, out)
        finally:
            gc.unfreeze()
    return _run_block(step, keys, n, out)


def _run_block(step, keys: set[str], n: int, out: list[float] | None) -> Measurement:
    m = Measurement()
    for _ in range(n):
        t0 = time.perf_counter()
        if keys == {"memory_growth"}:  # what measure_function does per repeated run: read what is held after it
            step()
            memory_held(False)
        elif keys == {"cpu_memory sampled"}:
            counter = OpCounter(count=False, memory=True)
            with counter:
                step()
            counter.finish()
        elif keys:
            m = Measurement()
            with instruments(keys, m):
                step()
        else:
            step()
        dt = time.perf_counter() - t0
        if out is not None:
            out.append(dt)
    return m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, metavar="PATH")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.steps < 1 or args.threads < 1 or args.warmup < 0:
        ap.error("--rounds, --steps and --threads must be at least 1, --warmup at least 0")
    torch.set_num_threads(args.threads)
    step = make_step()
    modes = list(MODES)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for mode in modes:
        run_block(step, MODES[mode][0], args.warmup, None)
    # After the warm-up: the first step also holds what torch and BLAS set up once (native buffers).
    m = run_block(step, {"syncs", "ops", "cpu_memory", "flops"}, 1, None)
    if m.syncs.total != 0 or not m.ops or not m.cpu_peak or not m.flops:
        print(f"budget_overhead: error: instruments measured nothing ({m})", file=sys.stderr)
        return 2
    samples = {mode: [] for mode in modes}
    for i in range(args.rounds):
        k = i % len(modes)
        order = modes[k:] + modes[:k]
        for mode in (order[::-1] if i % 2 else order):
            gc.collect()
            run_block(step, MODES[mode][0], args.steps, samples[mode])
        print(f"  round {i + 1}/{args.rounds}: " + " ".join(
            f"{mode} {statistics.median(samples[mode][-args.steps:]) * 1e3:.2f}" for mode in modes) + " (ms/step)",
            file=sys.stderr)
    base = statistics.median(samples["unmeasured"])
    rows = [["mode", "ms/step (median)", "x unmeasured", "target"]]
    result = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__,
                          "torch_threads": torch.get_num_threads(), "loadavg_1m_before": load_before,
                          "loadavg_1m_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
              "step": "MLP 512-512-512-10, batch 128, SGD, CPU float32",
              "ops_per_step": sum(m.ops.values()), "cpu_memory_method": m.cpu_method,
              "cpu_memory_peak_bytes": m.cpu_peak, "modes": {}}
    met = True
    for mode in modes:
        med = statistics.median(samples[mode])
        target = MODES[mode][1]
        ok = target is None or med / base <= target
        met &= ok
        rows.append([mode, f"{med * 1e3:.3f}", f"{med / base:.2f}x",
                     f"<= {target}x {verdict(ok)}" if target else "(info)"])
        result["modes"][mode] = {"median_s": med, "ratio": med / base, "target": target, "pass": ok}
    print()
    print("torchcheck budget overhead: one training step measured by a budget's instruments")
    print(f"machine: {result['machine']['platform']}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch thread(s); load average before/after: {load_before} / "
          f"{result['machine']['loadavg_1m_after']} (other work on the machine adds noise)")
    print(f"step: {result['step']}; {result['ops_per_step']} ATen ops per step; {args.rounds} interleaved rounds "
          f"x {args.steps} steps per mode")
    print(f"cpu_memory measured by {m.cpu_method}: peak {m.cpu_peak / 2**20:.2f} MiB per step")
    print(table(rows, {1, 2}))
    print("summary: " + ("all targets met" if met else "NOT all targets met"))
    if args.json:
        write_json(args.json, result, lambda msg: print(msg, file=sys.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
