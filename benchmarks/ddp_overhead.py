#!/usr/bin/env python
"""What does a 2-rank distributed test cost, per test, under torchcheck's harness?

Generates a throwaway suite of ``--tests`` identical 2-rank gloo tests whose body
is one all-reduce, in three variants, and runs each as a pytest subprocess, side
by side in one run:

- **warm pool**: ``@pytest.mark.distributed(world_size=2)``; one pool of rank
  processes, forked once from the preloaded zygote, serves every test;
- **isolated**: ``@pytest.mark.distributed(world_size=2, isolate=True)``; every
  test gets two fresh ranks forked from the preloaded zygote;
- **spawn per test** (baseline, what PyTorch's ``MultiProcessTestCase`` does): an
  ordinary test that starts two processes with the ``spawn`` start method, each
  importing torch, joining a process group through a ``FileStore``, running the
  all-reduce and exiting; the test joins them.

A conftest plugin in the suite records each test's wall time in the pytest
process (``pytest_runtest_logstart`` to ``pytest_runtest_logfinish``). The first
test of the warm and isolated sides also pays for starting the zygote (importing
torch once); it is reported apart, and the per-test figure is the median of the
other tests. Targets (issue 5): warm pool median at most 50 ms per test, isolated
at most 400 ms; both are also given as ratios against the baseline.

``--repeat`` runs the three sides that many times, interleaved, the order rotated;
the per-test medians pool every run's samples. Exits 2 if a side's tests did not
all pass, otherwise 0 (it is a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import table, verdict, write_json  # noqa: E402  (a sibling module)

TARGETS = {"warm": 0.050, "isolated": 0.400}

CONFTEST = '''
import json
import os
import time

_starts = {}


def pytest_runtest_logstart(nodeid, location):
    _starts[nodeid] = time.perf_counter()


def pytest_runtest_logfinish(nodeid, location):
    with open(os.environ["BENCH_TIMES"], "a") as f:
        f.write(json.dumps([nodeid, time.perf_counter() - _starts[nodeid]]) + "\\n")
'''

DISTRIBUTED = '''
import pytest


@pytest.mark.parametrize("i", range({n}))
@pytest.mark.distributed(world_size=2{extra})
def test_allreduce(rank, i):
    import torch
    import torch.distributed as dist

    t = torch.ones(4)
    dist.all_reduce(t)
    assert t[0].item() == 2
'''

SPAWN = '''
import datetime
import multiprocessing
import os

import pytest


def _rank(rank, store_path, errors):
    try:
        import torch
        import torch.distributed as dist

        store = dist.FileStore(store_path, 2)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=2,
                                timeout=datetime.timedelta(seconds=60))
        t = torch.ones(4)
        dist.all_reduce(t)
        assert t[0].item() == 2
        dist.destroy_process_group()
    except BaseException as e:
        errors.put(f"rank {{rank}}: {{e!r}}")
        raise


@pytest.mark.parametrize("i", range({n}))
def test_allreduce(i, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, str(tmp_path / "store"), errors)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0], errors.get() if not errors.empty() else "no error text"
'''


def run_side(root: Path, name: str, times: Path) -> list[float]:
    if times.exists():
        times.unlink()
    env = dict(os.environ, BENCH_TIMES=str(times), GLOO_SOCKET_IFNAME="lo")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"test_{name}.py"], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-2000:], sep="\n", file=sys.stderr)
        raise SystemExit(2)
    return [json.loads(line)[1] for line in times.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=20, help="tests per side (default 20)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side, interleaved (default 1)")
    parser.add_argument("--json", type=Path, help="also write every number to this JSON file")
    args = parser.parse_args()
    if args.tests < 2 or args.repeat < 1:
        parser.error("--tests must be at least 2 and --repeat at least 1")

    sides = {"warm": "warm pool", "isolated": "isolated (fresh ranks per test)", "spawn": "spawn per test (baseline)"}
    samples: dict[str, list[float]] = {k: [] for k in sides}
    first: dict[str, list[float]] = {k: [] for k in sides}
    with tempfile.TemporaryDirectory(prefix="torchcheck-ddp-bench-") as tmp:
        root = Path(tmp)
        (root / "conftest.py").write_text(CONFTEST)
        (root / "test_warm.py").write_text(DISTRIBUTED.format(n=args.tests, extra=""))
        (root / "test_isolated.py").write_text(DISTRIBUTED.format(n=args.tests, extra=", isolate=True"))
        (root / "test_spawn.py").write_text(SPAWN.format(n=args.tests))
        order = list(sides)
        for round_ in range(args.repeat):
            for name in order[round_ % 3:] + order[:round_ % 3]:
                print(f"round {round_ + 1}: {sides[name]} ...", file=sys.stderr, flush=True)
                times = run_side(root, name, root / f"{name}.times")
                first[name].append(times[0])
                samples[name].extend(times[1:])

    median = {k: statistics.median(v) for k, v in samples.items()}
    base = median["spawn"]
    rows = [["side", "first test (s)", "median per test (ms)", "vs spawn per test", "target", "verdict"]]
    for name, label in sides.items():
        target = TARGETS.get(name)
        rows.append([label, f"{statistics.median(first[name]):.2f}", f"{median[name] * 1000:.1f}",
                     f"{base / median[name]:.1f}x faster" if name != "spawn" else "1.0x",
                     f"<= {target * 1000:.0f} ms" if target else "",
                     verdict(median[name] <= target) if target else ""])
    print(f"2-rank gloo test, body = one all-reduce; {args.tests} tests per side, {args.repeat} run(s); "
          f"{os.cpu_count()} cores, Python {platform.python_version()}")
    print(table(rows, {1, 2, 3}))
    if args.json:
        write_json(args.json, {"tests": args.tests, "repeat": args.repeat, "median_s": median,
                               "first_test_s": first, "samples_s": samples,
                               "ratios_vs_spawn": {k: base / v for k, v in median.items()}}, print)


if __name__ == "__main__":
    main()
