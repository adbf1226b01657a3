"""Budgets end to end, in real pytest subprocesses: what each budget measures, the failure messages,
usage errors without tracebacks, the skip without CUDA, per-machine baselines and pytest-xdist.
"""

from __future__ import annotations

import json
import re

import pytest

MEASURED = '''
import json
import os
import time

import pytest
import torch
from torch import nn


def record(name, value):
    with open("results.jsonl", "a") as f:
        f.write(json.dumps([name, value]) + "\\n")


def test_each_sync_is_counted_once(budget):
    x = torch.randn(6)
    mask = x > 0
    cases = {
        "item": lambda: x[0].item(), "tolist": lambda: x.tolist(), "numpy": lambda: x.numpy(),
        "cpu": lambda: x.cpu(), "to_cpu": lambda: x.to("cpu"), "bool": lambda: bool(x.sum() > 0),
        "float": lambda: float(x[0]), "int": lambda: int(x[0]), "nonzero": lambda: x.nonzero(),
        "mask": lambda: x[mask], "mask_assign": lambda: x.clone().__setitem__(mask, 0.0),
        "print": lambda: print(x), "where1": lambda: torch.where(mask),
    }
    for name, fn in cases.items():
        record(name, budget(fn, syncs=1, name=name).syncs.total)
    record("device_only", budget(lambda: (x * 2 + 1).relu().sum(), syncs=0).syncs.total)


@pytest.mark.budget(syncs=1)
def test_syncs_over():
    x = torch.randn(4)
    x.sum().item()
    x.tolist()


@pytest.mark.budget(ops=3, flops="1K")
def test_ops_and_flops_over():
    a = torch.ones(32, 32)
    (a @ a).relu().sum()


def test_cpu_memory_sees_tensor_storage(budget):
    m = budget(lambda: torch.ones(64 * 2**20), cpu_memory="1GiB")  # 256 MiB of float32
    record("fn_256MiB", m.cpu_peak)
    with budget(cpu_memory="1GiB") as m:
        t = torch.ones(64 * 2**20)
        del t
    record("block_256MiB", m.cpu_peak)
    record("empty", budget(lambda: None, cpu_memory="1GiB").cpu_peak)


@pytest.mark.budget(cpu_memory="64MiB")
def test_cpu_memory_over():
    big = torch.zeros(32 * 2**20)  # 128 MiB
    big.add_(1)


def test_cpu_memory_counts_what_the_region_allocates(budget):
    x = torch.randn(2**20)  # 4 MiB
    # median sorts a copy of x inside the kernel: freed before the operator returns, still the region's peak
    record("kernel_temporary", budget(lambda: x.median(), cpu_memory="1GiB").cpu_peak)
    before = [torch.ones(16 * 2**20)]  # 64 MiB the caller allocated before the region

    def swap():
        before.clear()  # the caller's 64 MiB freed inside the region...
        return torch.ones(8 * 2**20)  # ...and 32 MiB allocated: the region's peak is 32 MiB, not 0 or -32

    record("swap", budget(swap, cpu_memory="1GiB").cpu_peak)


def test_cpu_memory_under_a_running_profiler(budget):
    # Only one profiler can run: under the user's, cpu_memory samples malloc after each operator instead.
    with torch.profiler.profile() as prof:
        m = budget(lambda: torch.ones(64 * 2**20), cpu_memory="1GiB")
    record("under_profiler", [m.cpu_peak, m.cpu_method, any(e.name == "aten::ones" for e in prof.events())])


def test_profiler_after_a_cpu_memory_region_sees_operators(budget):
    budget(lambda: torch.ones(4) + 1, cpu_memory="1GiB")
    with budget(cpu_memory="1GiB"):
        torch.ones(4) + 1
    with torch.profiler.profile() as prof:
        torch.ones(4).add(1)
    record("profiled_after", sorted({e.name for e in prof.events() if e.name in ("aten::ones", "aten::add")}))


def test_cpu_memory_block_over(budget):
    with budget(cpu_memory="16MiB"):
        big = torch.zeros(8 * 2**20)  # 32 MiB
        del big
        parts = [torch.zeros(2**20) for _ in range(3)]  # 4 MiB x3


KEPT = []


@pytest.mark.budget(memory_growth="16KiB", repeats=4)
def test_growth_leak():
    KEPT.append(torch.ones(64 * 1024))  # 256 KiB kept per run


@pytest.mark.budget(memory_growth="16KiB", repeats=4)
def test_growth_none():
    torch.ones(64 * 1024).sum()


class _Cycle:
    def __init__(self):
        self.me = self
        self.data = torch.ones(64 * 1024)  # 256 KiB, freed only by the cycle collector


@pytest.mark.budget(memory_growth="16KiB", repeats=4)
def test_growth_cyclic_garbage_is_not_growth():
    _Cycle()


@pytest.mark.budget(syncs=0, warmup=2)
def test_warmup_runs():
    record("warmup_runs", 1)


@pytest.mark.budget(time="10s", warmup=1, repeats=3)
def test_time_runs():
    record("time_runs", 1)


@pytest.mark.budget(time="1ms", repeats=3)
def test_time_over():
    time.sleep(0.01)


@pytest.mark.budget(graph_breaks=0, recompiles=0)
def test_compile_over():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    cf = torch.compile(f, backend="eager")
    cf(torch.ones(3))
    cf(torch.ones(4, 2))


@pytest.fixture
def rank3(monkeypatch):
    monkeypatch.setenv("RANK", "3")


@pytest.mark.budget(syncs=0)
def test_rank_in_message(rank3):
    torch.ones(2).tolist()


@pytest.mark.budget(cuda_memory="512MiB")
def test_cuda_marker():
    record("cuda_marker_ran", 1)


def test_cuda_fixture(budget):
    with budget(cuda_memory="1GiB", cuda_reserved="2GiB"):
        record("cuda_fixture_ran", 1)
'''


def _results(inner) -> dict[str, list]:
    out: dict[str, list] = {}
    for line in inner.read("results.jsonl").splitlines():
        name, value = json.loads(line)
        out.setdefault(name, []).append(value)
    return out


def test_budgets_measure_and_explain(inner):
    import torch

    inner.pytester.makepyfile(test_measured=MEASURED)
    result = inner.run("-p", "no:randomly")
    outcomes = inner.outcomes(result)
    results = _results(inner)

    # Every kind of sync counts exactly once, on CPU as on a GPU; device-only work counts none.
    for kind in ("item", "tolist", "numpy", "cpu", "to_cpu", "bool", "float", "int", "nonzero", "mask",
                 "mask_assign", "print", "where1"):
        assert results[kind] == [1], (kind, results[kind])
    assert results["device_only"] == [0]
    assert outcomes["test_each_sync_is_counted_once"] == "PASSED"

    inner.message(result, "test_syncs_over").fnmatch_lines([
        "*budget exceeded: syncs 2 > limit 1 in region 'test body' of test_measured.py::test_syncs_over (device cpu)",
        "*syncs: 2 host-device synchronisation(s), limit 1; call sites:",
        "*1x .item() at test_measured.py:*  x.sum().item()",
        "*1x .tolist() at test_measured.py:*  x.tolist()",
        "*likely cause: a value read back to the host*",
        "*to change a limit, edit it where it was set (syncs was set by @pytest.mark.budget on "
        "test_measured.py::test_syncs_over)",
    ])
    inner.message(result, "test_ops_and_flops_over").fnmatch_lines([
        "*budget exceeded: ops * > limit 3; flops 65.5 KFLOP > limit 1 KFLOP in region*",
        "*ops: * ATen operator calls, limit 3; top operators: *aten.mm 1*",
        "*flops: 65.5 KFLOP (65,536), limit 1 KFLOP; top operators: aten.mm 65.5 KFLOP",
    ])

    # The 256 MiB proof: a region allocating a 256 MiB tensor measures 256 MiB within 5%; an empty one ~0.
    mib = 2**20
    for key in ("fn_256MiB", "block_256MiB"):
        assert abs(results[key][0] - 256 * mib) <= 0.05 * 256 * mib, (key, results[key][0] / mib)
    assert results["empty"][0] < 64 * 1024, results["empty"]
    assert 4 * mib <= results["kernel_temporary"][0] <= 4.2 * mib, results["kernel_temporary"][0] / mib
    assert abs(results["swap"][0] - 32 * mib) <= 0.05 * 32 * mib, results["swap"][0] / mib
    peak, method, seen_by_user = results["under_profiler"][0]
    assert abs(peak - 256 * mib) <= 0.05 * 256 * mib and method == "sampled after each operator" and seen_by_user
    assert results["profiled_after"] == [["aten::add", "aten::ones"]]  # operator callbacks are back on
    assert "Memory block of unknown size" not in result.stdout.str() + result.stderr.str()
    inner.message(result, "test_cpu_memory_block_over").fnmatch_lines([
        "*budget exceeded: cpu_memory 32.00 MiB > limit 16.00 MiB in region 'with budget(...) at test_measured.py:*' "
        "of test_measured.py::test_cpu_memory_block_over (device cpu)",
        "*cpu_memory: peak 32.00 MiB above the region's start on cpu, limit 16.00 MiB; largest allocations: "
        "32.00 MiB, 4.00 MiB x3",
        "*(sizes only: a `with` block runs once, so its allocations are not traced to operators; pass the region "
        "as a function, budget(fn, cpu_memory=...), or mark the test @pytest.mark.budget(cpu_memory=...), to see "
        "each one's operator and line)",
    ])
    inner.message(result, "test_cpu_memory_over").fnmatch_lines([
        "*budget exceeded: cpu_memory 128.* MiB > limit 64.00 MiB in region 'test body'*",
        "*cpu_memory: peak 128.00 MiB above the region's start on cpu, limit 64.00 MiB; largest allocations by an "
        "operator (one more run of the region, malloc read after each operator):",
        "*128.0? MiB by aten.zeros at test_measured.py:*  big = torch.zeros(32 * 2**20)  # 128 MiB",
    ])

    assert outcomes["test_growth_none"] == "PASSED"
    assert outcomes["test_growth_cyclic_garbage_is_not_growth"] == "PASSED"  # collected before each reading
    inner.message(result, "test_growth_leak").fnmatch_lines([
        "*budget exceeded: memory_growth 256.* KiB/run > limit 16.00 KiB in region 'test body'*",
        "*cpu: 256.* KiB per run (after each run: +256.*, +256.*, +256.*, +256.*)  <- over",
        "*likely cause: something outlives each run: a loss accumulated with its autograd graph*",
    ])

    # warmup=2 -> 2 warm-up runs + 1 measured; time: 1 warm-up + 1 measured + 3 timed repeats.
    assert len(results["warmup_runs"]) == 3 and outcomes["test_warmup_runs"] == "PASSED"
    assert len(results["time_runs"]) == 5 and outcomes["test_time_runs"] == "PASSED"
    inner.message(result, "test_time_over").fnmatch_lines([
        "*budget exceeded: time 1*.* ms > limit 1.000 ms in region 'test body'*",
        "*time: median 1*.* ms of 3 runs (time.perf_counter; min *, max *), limit 1.000 ms",
    ])

    inner.message(result, "test_compile_over").fnmatch_lines([
        "*budget exceeded: graph_breaks * > limit 0; recompiles * > limit 0 in region*",
        "*graph_breaks: * graph break(s) under torch.compile, limit 0:",
        "*1. test_measured.py:*: Data-dependent branching (code: if x.sum() > 0:)",
        "*recompiles: * recompilation(s) under torch.compile, limit 0:",
        "*1. test_measured.py:*: f: *tensor 'x' *",
    ])
    inner.message(result, "test_rank_in_message").fnmatch_lines(["*of test_measured.py::test_rank_in_message (rank 3, device cpu)"])

    if torch.cuda.is_available():
        assert outcomes["test_cuda_marker"] == outcomes["test_cuda_fixture"] == "PASSED"
    else:  # skipped with a reason, never passed with a zero, and the bodies never ran
        result.stdout.fnmatch_lines([
            "SKIPPED [[]1[]] test_measured.py:*: budget cuda_memory needs CUDA: no CUDA device found*",
            "SKIPPED [[]1[]] test_measured.py:*: budget cuda_memory, cuda_reserved needs CUDA: "
            "torch.cuda.is_available() is False*",
        ])
        assert "cuda_marker_ran" not in results and "cuda_fixture_ran" not in results
    result.stdout.fnmatch_lines(["*- torchcheck -*", "rerun: *test_measured.py::test_syncs_over*"])
    assert sum(v == "FAILED" for v in outcomes.values()) == 8, outcomes


USAGE = '''
import pytest


@pytest.mark.budget(sync=0)
def test_unknown_key():
    pass


@pytest.mark.budget(cpu_memory="12 parsecs")
def test_bad_unit():
    pass


@pytest.mark.budget(0)
def test_positional():
    pass


@pytest.mark.budget()
def test_empty():
    pass


def test_fixture_bad_value(budget):
    budget(lambda: None, syncs=-1)


def test_with_block_cannot_repeat(budget):
    with budget(time="10ms"):
        pass


def test_fixture_not_callable(budget):
    budget(3, syncs=0)
'''


def test_bad_marker_and_fixture_arguments_are_clear_errors(inner):
    inner.pytester.makepyfile(test_usage=USAGE)
    result = inner.run()
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*@pytest.mark.budget on test_usage.py::test_unknown_key: unknown budget key 'sync' (did you mean 'syncs'?); "
        "valid keys: cpu_memory, cuda_memory, cuda_reserved, memory_growth, syncs, flops, ops, graph_breaks, "
        "recompiles, time; settings: warmup, repeats, tolerance, name",
    ])
    result.stdout.fnmatch_lines(["*@pytest.mark.budget on test_usage.py::test_bad_unit: cpu_memory='12 parsecs': "
                                 "expected a size in bytes*"])
    result.stdout.fnmatch_lines(["*test_usage.py::test_positional: takes keyword arguments only, got positional 0; "
                                 "signature: budget(*, cpu_memory=*"])
    result.stdout.fnmatch_lines(["*test_usage.py::test_empty: no limit given; signature: budget(*"])
    result.stdout.fnmatch_lines(["*: budget(...) at test_usage.py:* in test_usage.py::test_fixture_bad_value: "
                                 "syncs=-1: expected a non-negative integer*"])
    result.stdout.fnmatch_lines(["*test_with_block_cannot_repeat: time need(s) the region to run more than once, "
                                 "which a `with` block cannot do; pass it as a function: budget(fn, time=...)*"])
    result.stdout.fnmatch_lines(["*test_fixture_not_callable: the positional argument must be the region as a "
                                 "function*got 3*"])
    outcomes = inner.outcomes(result)
    assert outcomes == {"test_unknown_key": "ERROR", "test_bad_unit": "ERROR", "test_positional": "ERROR",
                        "test_empty": "ERROR", "test_fixture_bad_value": "FAILED",
                        "test_with_block_cannot_repeat": "FAILED", "test_fixture_not_callable": "FAILED"}, out
    assert "Traceback" not in out


@pytest.mark.parametrize("args, ini, env, pattern", [
    ((), "torchcheck_budget = syncs=lots", {},
     "ERROR: ini option torchcheck_budget in */tox.ini: syncs='lots': expected a non-negative integer*"),
    ((), "torchcheck_budget = sync=0", {},
     "ERROR: ini option torchcheck_budget in */tox.ini: unknown budget key 'sync' (did you mean 'syncs'?)*"),
    (("--torchcheck-baseline-tolerance", "0.5"), "", {},
     "ERROR: --torchcheck-baseline-tolerance: expected a ratio >= 1 (e.g. 1.3: *), got '0.5'"),
    (("--torchcheck-baseline-save", "../up"), "", {},
     "ERROR: --torchcheck-baseline-save: baseline name '../up' may hold only letters, digits*"),
    ((), "", {"TORCHCHECK_BUDGET": "cpu_memory=lots"},
     "ERROR: environment variable TORCHCHECK_BUDGET: cpu_memory='lots': expected a size in bytes*"),
    ((), "torchcheck_baseline_tolerance = fast", {},
     "ERROR: ini option torchcheck_baseline_tolerance in */tox.ini: expected a ratio >= 1*got 'fast'"),
])
def test_bad_options_are_usage_errors(inner, monkeypatch, args, ini, env, pattern):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    inner.pytester.makeini(f"[pytest]\n{ini}\n")
    inner.pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    inner.assert_usage_error(inner.run(*args), pattern)


DEFAULTS = '''
import pytest
import torch


@pytest.mark.budget(ops=10000)
def test_ini_syncs_apply():
    torch.ones(2).sum().item()


@pytest.mark.budget(syncs=1)
def test_marker_overrides_ini():
    torch.ones(2).sum().item()


def test_fixture_gets_defaults(budget):
    with budget(ops=10000):
        torch.ones(2).tolist()


def test_no_budget_no_measurement():
    torch.ones(2).tolist()
'''


def test_ini_defaults_apply_below_marker_and_fixture_keys(inner):
    inner.pytester.makeini("[pytest]\ntorchcheck_budget = syncs=0\n")
    inner.pytester.makepyfile(test_defaults=DEFAULTS)
    result = inner.run()
    assert inner.outcomes(result) == {"test_ini_syncs_apply": "FAILED", "test_marker_overrides_ini": "PASSED",
                                      "test_fixture_gets_defaults": "FAILED",
                                      "test_no_budget_no_measurement": "PASSED"}
    inner.message(result, "test_ini_syncs_apply").fnmatch_lines([
        "*syncs 1 > limit 0*", "*(syncs was set by ini option torchcheck_budget in */tox.ini)"])


def test_markers_and_options_are_documented(inner):
    result = inner.run("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.budget(*, cpu_memory=, cuda_memory=, *warmup=0, repeats=5*): *"])
    result = inner.run("--help")
    result.stdout.fnmatch_lines(["*--torchcheck-budget=SPEC*", "*--torchcheck-baseline-save=NAME*",
                                 "*--torchcheck-baseline-compare=NAME*", "*--torchcheck-baseline-tolerance=RATIO*"])


BASELINE = '''
import os
import time

import pytest


@pytest.mark.budget(repeats=3)
def test_step():
    time.sleep(float(os.environ.get("STEP_SECONDS", "0.05")))


def test_region(budget):
    budget(lambda: time.sleep(float(os.environ.get("STEP_SECONDS", "0.05"))), repeats=3, name="step")
'''
# The steps sleep rather than compute, and long enough that a busy machine (the suite's other xdist
# worker, other jobs) adds little to them: a 10 ms sleep measured 25 ms under load, and the 3x
# tolerance of the unchanged runs below does not have to absorb that.


def test_baselines_save_compare_and_fail_when_slower(inner, monkeypatch):
    inner.pytester.makepyfile(test_baseline=BASELINE)
    saved = inner.run("--torchcheck-baseline-save", "box1")
    assert inner.outcomes(saved) == {"test_step": "PASSED", "test_region": "PASSED"}
    files = sorted((inner.pytester.path / ".torchcheck" / "baselines" / "box1").glob("*.json"))
    assert len(files) == 2
    data = json.loads(files[0].read_text())
    assert 0.049 < data["median_s"] < 0.5 and len(data["times_s"]) == 3 and data["machine"]["torch"]

    same = inner.run("--torchcheck-baseline-compare", "box1", "--torchcheck-baseline-tolerance", "3")
    assert inner.outcomes(same) == {"test_step": "PASSED", "test_region": "PASSED"}

    monkeypatch.setenv("STEP_SECONDS", "0.4")  # 8x: still over 1.3x when load stretched the saved sleeps
    slower = inner.run("--torchcheck-baseline-compare", "box1")
    assert inner.outcomes(slower) == {"test_step": "FAILED", "test_region": "FAILED"}
    message = inner.message(slower, "test_step")
    message.fnmatch_lines([
        "*budget exceeded: time *x baseline > tolerance 1.3x in region 'test body' of test_baseline.py::test_step*",
        "*time vs baseline: median *.* ms is *x the baseline *.* ms (*box1*.json), tolerance 1.3x",
        "*to change the limit: tolerance from the default (--torchcheck-baseline-tolerance or ini "
        "torchcheck_baseline_tolerance changes it), or re-save the baseline with --torchcheck-baseline-save box1",
    ])
    # The numbers are in milliseconds: a sleep never ends early, and load only lengthens it.
    median, ratio, base = map(float, re.search(r"median ([\d.]+) ms is ([\d.]+)x the baseline ([\d.]+) ms",
                                               "\n".join(message.lines)).groups())
    assert median >= 400 and base >= 50 and ratio == pytest.approx(median / base, rel=0.01)

    missing = inner.run("--torchcheck-baseline-compare", "nosuch")
    assert inner.outcomes(missing) == {"test_step": "PASSED", "test_region": "PASSED"}
    missing.stdout.fnmatch_lines(["*no baseline 'nosuch' for region 'test body' of test_baseline.py::test_step*"])


def test_baselines_under_xdist(inner):
    pytest.importorskip("xdist")
    inner.pytester.makepyfile(test_baseline=BASELINE)
    saved = inner.run("-n", "2", "--torchcheck-baseline-save", "ci")
    saved.assert_outcomes(passed=2)
    assert len(list((inner.pytester.path / ".torchcheck" / "baselines" / "ci").glob("*.json"))) == 2
    # What is held here is that each worker finds the baselines the other saved, not the timing:
    # the tolerance is wide, as a worker of a busy xdist session measures as it can.
    compared = inner.run("-n", "2", "--torchcheck-baseline-compare", "ci", "--torchcheck-baseline-tolerance", "10")
    compared.assert_outcomes(passed=2)
    assert "no baseline" not in compared.stdout.str()


def test_op_counting_leaves_torch_dynamo_unimported(tmp_path) -> None:
    """The ops/cpu_memory mode runs once per operator, so torch's per-call torch.compile guard is taken off
    (the code is marked skipped once instead): no guard frames, no 0.9 s import of torch._dynamo on the
    first operator, and torch.compile still never traces into the mode."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from pytest_torchcheck.budgets.measure import OpCounter\n"
        "assert not hasattr(OpCounter.__dict__['__torch_dispatch__'], '__wrapped__')\n"
        "with OpCounter(count=True, memory=True) as c:\n"
        "    torch.ones(256, 256).relu().sum()\n"
        "c.finish()\n"
        "print(sorted(c.ops.items()), 'torch._dynamo' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[('ones', 1), ('relu', 1), ('sum', 1)] False"


RANKS = '''
import json

import pytest
import torch


@pytest.mark.distributed(world_size=2)
def test_fixture_in_ranks(rank, budget):
    m = budget(lambda: torch.ones(2**20 * (rank + 1)), cpu_memory="1GiB", name="alloc")  # 4 MiB, 8 MiB
    with open(f"peak{rank}.json", "w") as f:
        json.dump(m.cpu_peak, f)
    with budget(syncs=0):
        t = torch.ones(4)
        if rank == 1:
            t.sum().item()


@pytest.mark.distributed(world_size=2)
@pytest.mark.budget(cpu_memory="6MiB")
def test_marker_in_ranks(rank):
    torch.ones(2**20 * (rank + 1))
'''


def test_budgets_are_measured_inside_each_rank(inner) -> None:
    """In a real 2-rank gloo group, each rank measures its own region and a failure names its rank."""
    inner.pytester.makepyfile(test_ranks=RANKS)
    result = inner.run("-p", "no:randomly")
    assert inner.outcomes(result) == {"test_fixture_in_ranks": "FAILED", "test_marker_in_ranks": "FAILED"}
    mib = 2**20
    assert [json.loads(inner.read(f"peak{r}.json")) for r in (0, 1)] == [4 * mib, 8 * mib]
    result.stdout.fnmatch_lines([  # rank 1 failed; rank 0, within its budgets, passed
        "*_ test_fixture_in_ranks _*", "rank 1 of 2 failed first, in call (root cause)", "*- ranks that passed: 0 -*",
        "*_ test_marker_in_ranks _*", "rank 1 of 2 failed first, in call (root cause)", "*- ranks that passed: 0 -*",
    ])
    inner.message(result, "test_fixture_in_ranks").fnmatch_lines([
        "*budget exceeded: syncs 1 > limit 0 in region 'with budget(...) at test_ranks.py:*' of "
        "test_ranks.py::test_fixture_in_ranks (rank 1, device cpu)",
        "*1x .item() at test_ranks.py:*  t.sum().item()",
    ])
    inner.message(result, "test_marker_in_ranks").fnmatch_lines([
        "*budget exceeded: cpu_memory 8.00 MiB > limit 6.00 MiB in region 'test body' of "
        "test_ranks.py::test_marker_in_ranks (rank 1, device cpu)",
        "*8.00 MiB by aten.ones at test_ranks.py:*  torch.ones(2**20 * (rank + 1))",
    ])
