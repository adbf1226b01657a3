#!/usr/bin/env python
"""How long does assert_gradcheck take on a module, next to raw torch.autograd.gradcheck?

Measures, side by side in one run, on the same float64 input and parameters:

(a) a correct module, Linear(16,32)-Tanh-Linear(32,8), input 4x16:
    - ``assert_gradcheck(module, x)`` (``pytest_torchcheck.gradcheck``: this
      Jacobian is under the line, so the full check, every entry, then torch's
      fast mode for its other checks);
    - raw ``torch.autograd.gradcheck(f, (x, *params), fast_mode=False)``, the
      slow mode that issue 3 compares against, with ``f`` calling the module
      through ``torch.func.functional_call`` so that the parameters are checked
      too, as assert_gradcheck does;
    - the same raw call with ``fast_mode=True``.
(b) the failure path: the same shape of module with a custom
    ``autograd.Function`` tanh whose backward is wrong by a factor of 2:
    - ``assert_gradcheck`` (the full check finds the worst element);
    - raw slow and fast mode with ``raise_exception=False`` (they stop at
      returning False; no message).

Tolerances are assert_gradcheck's defaults, which are also gradcheck's
(eps=1e-6, atol=1e-5, rtol=1e-3). torch runs with a fixed thread count
(``--threads``, default 1). Every contender runs once as a warm-up, then
``--repeat`` times, interleaved, the order alternated from round to round; the
medians are reported. There is no target in issue 3 for this, only "time
against raw gradcheck (slow mode)"; the script prints the ratios. It exits 0
whatever the numbers, and 2 only when a contender misbehaved (a correct module
failing, a wrong one passing). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pytest_torchcheck.errors import TorchcheckFailure
from pytest_torchcheck.gradcheck import assert_gradcheck
from _report import stat, table, write_json  # a sibling module: benchmarks/ is on sys.path when run as a script


# ------------------------------------------------------------------ models
class WrongTanh(torch.autograd.Function):
    """tanh whose backward is twice the true derivative."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return 2.0 * grad * (1 - y * y)  # the bug: a factor of 2


class WrongTanhModule(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return WrongTanh.apply(x)


def make_module(wrong: bool) -> nn.Module:
    torch.manual_seed(0)
    act = WrongTanhModule() if wrong else nn.Tanh()
    return nn.Sequential(nn.Linear(16, 32), act, nn.Linear(32, 8)).double()


def raw_target(module: nn.Module) -> tuple[Callable[..., Any], tuple[torch.Tensor, ...]]:
    """``f(x, *params)`` through functional_call, and the float64 params, as assert_gradcheck builds them."""
    names = [n for n, _ in module.named_parameters()]
    params = tuple(p.detach().to(torch.float64).clone().requires_grad_(True) for _, p in module.named_parameters())

    def f(x: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(module, dict(zip(names, ps)), (x,))

    return f, params


# ---------------------------------------------------------------- contenders
class Misbehaved(Exception):
    pass


def contenders(x: torch.Tensor) -> dict[str, dict[str, Callable[[], Any]]]:
    good, bad = make_module(False), make_module(True)
    f_good, p_good = raw_target(good)
    f_bad, p_bad = raw_target(bad)
    xg = x.detach().clone().requires_grad_(True)

    def a_assert() -> None:
        assert_gradcheck(good, x)

    def a_slow() -> None:
        if not torch.autograd.gradcheck(f_good, (xg, *p_good), fast_mode=False):
            raise Misbehaved("raw slow gradcheck failed a correct module")

    def a_fast() -> None:
        if not torch.autograd.gradcheck(f_good, (xg, *p_good), fast_mode=True):
            raise Misbehaved("raw fast gradcheck failed a correct module")

    def b_assert() -> str:
        try:
            assert_gradcheck(bad, x)
        except TorchcheckFailure as e:
            return str(e)
        raise Misbehaved("assert_gradcheck passed a module with a wrong backward")

    def b_slow() -> None:
        if torch.autograd.gradcheck(f_bad, (xg, *p_bad), fast_mode=False, raise_exception=False):
            raise Misbehaved("raw slow gradcheck passed a module with a wrong backward")

    def b_fast() -> None:
        if torch.autograd.gradcheck(f_bad, (xg, *p_bad), fast_mode=True, raise_exception=False):
            raise Misbehaved("raw fast gradcheck passed a module with a wrong backward")

    return {
        "pass": {"assert_gradcheck": a_assert, "raw_slow": a_slow, "raw_fast": a_fast},
        "fail": {"assert_gradcheck": b_assert, "raw_slow": b_slow, "raw_fast": b_fast},
    }


LABELS = {
    "assert_gradcheck": "assert_gradcheck(module, x)",
    "raw_slow": "gradcheck(..., fast_mode=False)",
    "raw_fast": "gradcheck(..., fast_mode=True)",
}


def measure(cases: dict, repeat: int, log) -> tuple[dict, dict]:
    samples = {c: {k: [] for k in fns} for c, fns in cases.items()}
    notes: dict = {}
    for c, fns in cases.items():  # warm-up, and the failure message once
        for k, fn in fns.items():
            out = fn()
            if c == "fail" and k == "assert_gradcheck":
                notes["failure_message"] = out
    for i in range(repeat):
        for c, fns in cases.items():
            order = list(fns) if i % 2 == 0 else list(fns)[::-1]
            for k in order:
                gc.collect()
                t0 = time.perf_counter()
                fns[k]()
                samples[c][k].append(time.perf_counter() - t0)
        log(f"  round {i + 1}/{repeat}: " + "; ".join(
            f"{c}: " + " ".join(f"{k} {samples[c][k][-1] * 1e3:.1f}" for k in fns) for c, fns in cases.items())
            + " (ms)")
    return samples, notes


# ------------------------------------------------------------------ sweep
def sweep(widths: list[int], repeat: int, log) -> list[dict]:
    """Full check, raw slow mode and the projection path on growing MLPs; medians in seconds."""
    from pytest_torchcheck import gradcheck as G

    rows = []
    for h in widths:
        torch.manual_seed(0)
        module = nn.Sequential(nn.Linear(16, h), nn.Tanh(), nn.Linear(h, 8)).double()
        x = torch.randn(4, 16, dtype=torch.float64)
        f, params = raw_target(module)
        xg = x.detach().clone().requires_grad_(True)
        n_in = x.numel() + sum(p.numel() for p in params)
        evaluations = 2 * n_in + 4 * 8

        def projected() -> None:
            old = G.FULL_CHECK_MAX_EVALUATIONS
            G.FULL_CHECK_MAX_EVALUATIONS = 0
            try:
                assert_gradcheck(module, x)
            finally:
                G.FULL_CHECK_MAX_EVALUATIONS = old

        fns = {"full": lambda: assert_gradcheck(module, x, mode="full"),
               "raw_slow": lambda: torch.autograd.gradcheck(f, (xg, *params), fast_mode=False),
               "projections": projected}
        times: dict = {k: [] for k in fns}
        for k, fn in fns.items():
            fn()
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        row = {"hidden": h, "evaluations": evaluations, **{k: stat(v)["median"] for k, v in times.items()}}
        log(f"  h={h}: {evaluations} evaluations, full {row['full'] * 1e3:.0f} ms, raw slow "
            f"{row['raw_slow'] * 1e3:.0f} ms, projections {row['projections'] * 1e3:.0f} ms")
        rows.append(row)
    return rows


# ----------------------------------------------------------------- report




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per contender (default 15)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers to this JSON file")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress lines, only the report")
    ap.add_argument("--sweep", type=int, nargs="*", metavar="H",
                    help="also time the full check against the projection path on Linear(16,H)-Tanh-Linear(H,8) "
                         "for these hidden widths (no value: 4 16 64 128 256)")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.threads < 1:
        ap.error("--repeat and --threads must be at least 1")

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

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
    torch.manual_seed(1)
    x = torch.randn(4, 16, dtype=torch.float64)
    cases = contenders(x)
    n_params = sum(p.numel() for p in make_module(False).parameters())
    log(f"torch threads: {torch.get_num_threads()}; warm-up, then {args.repeat} interleaved rounds ...")
    try:
        samples, notes = measure(cases, args.repeat, log)
    except Misbehaved as e:
        print(f"gradcheck_speed: error: {e}", file=sys.stderr)
        return 2
    if hasattr(os, "getloadavg"):
        machine["loadavg_1m_after"] = os.getloadavg()[0]

    result: dict = {"machine": machine, "repeat": args.repeat, "warmup_runs": 1,
                    "statistic": "median of the timed runs; ratios are ratios of medians",
                    "setup": {"module": "Sequential(Linear(16,32), Tanh, Linear(32,8)).double()",
                              "input": "4x16 float64", "parameters": n_params,
                              "inputs_checked": 4 * 16 + n_params, "outputs": 4 * 8,
                              "tolerances": {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}},
                    "cases": {}}
    for c in cases:
        s = {k: stat(v) for k, v in samples[c].items()}
        a, slow, fast = (s[k]["median"] for k in ("assert_gradcheck", "raw_slow", "raw_fast"))
        result["cases"][c] = {"seconds": s, "assert_over_raw_slow": a / slow, "assert_over_raw_fast": a / fast,
                              "raw_slow_over_raw_fast": slow / fast}
    result["failure_message"] = notes.get("failure_message")

    # ---- report
    print()
    print("torchcheck assert_gradcheck speed")
    print(f"machine: {machine['platform']}, {machine['cpus']} CPUs; Python {machine['python']}, "
          f"torch {machine['torch']}, torch threads: {machine['torch_threads']} (torch.set_num_threads)")
    if machine.get("loadavg_1m_before") is not None:
        print(f"load average (1 min) before/after: {machine['loadavg_1m_before']:.2f} / "
              f"{machine['loadavg_1m_after']:.2f}  (other work on the machine adds noise)")
    print(f"module: Linear(16,32)-Tanh-Linear(32,8) in float64, input 4x16: {4 * 16} input + {n_params} parameter "
          f"elements checked against {4 * 8} outputs; eps 1e-6, atol 1e-5, rtol 1e-3")
    print(f"timing: 1 warm-up, then median of {args.repeat} interleaved runs [min-max], milliseconds")
    heads = {"pass": "(a) correct module (tanh): the check passes",
             "fail": "(b) failure path: custom autograd.Function tanh with a backward wrong by a factor of 2"}
    for c in cases:
        r = result["cases"][c]
        print()
        print(heads[c])
        rows = [["contender", "ms [min-max]", "x raw slow"]]
        for k in ("assert_gradcheck", "raw_slow", "raw_fast"):
            s = r["seconds"][k]
            rows.append([LABELS[k] + (" (raises)" if c == "fail" and k == "assert_gradcheck" else
                                      " -> False" if c == "fail" else ""),
                         f"{s['median'] * 1e3:.1f} [{s['min'] * 1e3:.1f}-{s['max'] * 1e3:.1f}]",
                         f"{s['median'] / r['seconds']['raw_slow']['median']:.2f}x"])
        print(table(rows, {1, 2}))
        print(f"  assert_gradcheck / raw slow mode: {r['assert_over_raw_slow']:.2f}x;  "
              f"/ raw fast mode: {r['assert_over_raw_fast']:.2f}x")
    msg = result["failure_message"] or ""
    print()
    print("  the failure message assert_gradcheck produced for (b):")
    print("\n".join("    " + line for line in msg.splitlines()))
    print()
    p, f = result["cases"]["pass"], result["cases"]["fail"]
    print(f"summary: passing check {p['assert_over_raw_slow']:.2f}x raw slow mode "
          f"({p['assert_over_raw_fast']:.2f}x raw fast mode); failure path {f['assert_over_raw_slow']:.2f}x "
          f"raw slow mode ({f['seconds']['assert_gradcheck']['median'] * 1e3:.0f} ms) -- no target in issue 3")

    if args.sweep is not None:
        from pytest_torchcheck.gradcheck import FULL_CHECK_MAX_EVALUATIONS, PROJECTIONS

        widths = args.sweep or [4, 16, 64, 128, 256]
        log(f"sweep over hidden widths {widths}, median of {max(3, args.repeat // 5)} runs ...")
        result["sweep"] = sweep(widths, max(3, args.repeat // 5), log)
        print()
        print(f"(c) where the full check stops being affordable (auto mode's line: {FULL_CHECK_MAX_EVALUATIONS} "
              f"evaluations; above it, fast mode + {PROJECTIONS} projections)")
        rows = [["hidden", "evaluations", "full check ms", "raw slow ms", "projections ms", "us/evaluation (full)"]]
        for r in result["sweep"]:
            rows.append([str(r["hidden"]), str(r["evaluations"]), f"{r['full'] * 1e3:.0f}",
                         f"{r['raw_slow'] * 1e3:.0f}", f"{r['projections'] * 1e3:.0f}",
                         f"{r['full'] / r['evaluations'] * 1e6:.0f}"])
        print(table(rows, {1, 2, 3, 4, 5}))
    if args.json:
        write_json(args.json, result, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
