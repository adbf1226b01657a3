"""The DDP harness in real pytest sessions: real gloo process groups, real crashes, real hangs.

Every inner session runs in a subprocess with a timeout (``inner.run``), so a harness bug fails these
tests instead of hanging CI. Each inner session pays for one zygote start (importing torch), so the
cases are grouped into few sessions.
"""

from __future__ import annotations

import os
import re
import signal
import textwrap
import time
import uuid
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.test_fixtures import FIXTURES

# Pasted into the inner test files: an all-reduce of one number, run inside the ranks.
ALLREDUCE = textwrap.dedent('''
    def _allreduce(value):
        import torch
        import torch.distributed as dist

        t = torch.tensor([float(value)])
        dist.all_reduce(t)
        return t.item()
''')

OUTCOMES = textwrap.dedent('''
    import os
    import signal
    import sys

    import pytest
''') + ALLREDUCE + textwrap.dedent('''


    @pytest.mark.distributed(world_size=2)
    def test_fixtures(rank, world_size, process_group, rank_device, tmp_path, shared_value):
        import torch.distributed as dist

        assert world_size == 2 and dist.get_world_size(process_group) == 2 and dist.get_rank() == rank
        assert str(rank_device) == "cpu" and os.environ["RANK"] == str(rank)
        assert shared_value == 42  # a conftest fixture, set up inside the rank
        (tmp_path / "mine").write_text(str(rank))
        paths = [None, None]
        dist.all_gather_object(paths, str(tmp_path))
        assert paths[0] != paths[1], paths  # one tmp_path per rank ...
        assert "torchcheck-ranks" in paths[rank]  # ... kept under pytest's basetemp
        assert _allreduce(rank + 1) == 3
        print(f"hello from rank {rank}")


    @pytest.mark.parametrize("world_size", [1, 3])
    @pytest.mark.distributed
    def test_world_size_from_parametrize(rank, world_size):
        assert _allreduce(1) == world_size


    @pytest.mark.distributed(world_size=2)
    @pytest.mark.parametrize("scale", [2, 5])
    def test_parametrized(rank, scale):
        assert _allreduce(scale) == 2 * scale


    @pytest.mark.distributed(world_size=2)
    def test_root_cause(rank):
        if rank == 1:
            raise ValueError("boom on rank 1")
        _allreduce(1)


    @pytest.mark.distributed(world_size=2)
    def test_skip_in_one_rank(rank):
        if rank == 1:
            pytest.skip("no second device")
        _allreduce(1)


    @pytest.mark.distributed(world_size=2)
    @pytest.mark.xfail(reason="known bad all-reduce", strict=True)
    def test_xfail(rank):
        assert _allreduce(1) == 3


    @pytest.mark.distributed(world_size=2)
    def test_segfault(rank):
        if rank == 0:
            print("rank 0 about to crash", flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        _allreduce(1)


    @pytest.mark.distributed(world_size=2)
    def test_exit_code(rank):
        if rank == 1:
            os._exit(7)
        _allreduce(1)


    @pytest.mark.distributed(world_size=2)
    def test_killed(rank):
        if rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does
        _allreduce(1)


    class TestInAClass:
        @pytest.mark.distributed(world_size=2)
        def test_method(self, rank):
            assert _allreduce(rank) == 1

        @pytest.mark.distributed(world_size=2)
        def test_imperative_xfail(self, rank):
            if rank == 0:
                pytest.xfail("rank 0 knows this is broken")
            _allreduce(1)


    @pytest.mark.distributed(world_size=2, timeout=4)
    def test_hang(rank):
        import subprocess
        import time

        # A child of the rank (as a DataLoader worker would be) must not outlive the kill either.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        while True:  # a deadlock outside any collective: only the harness deadline ends it
            time.sleep(0.05)


    @pytest.mark.distributed(world_size=2)
    def test_after_hang(rank):
        assert _allreduce(1) == 2


    def test_plain():
        assert "torch" not in sys.modules  # the pytest process never imported torch for the ranks
''')

CONFTEST = textwrap.dedent('''
    import os
    import sys

    import pytest


    @pytest.fixture
    def shared_value():
        return 42


    def pytest_sessionfinish(session):
        path = os.environ.get("TORCHCHECK_TEST_PARENT_STATE")
        if path and not os.environ.get("TORCHCHECK_DDP_WORKER"):
            with open(path, "w") as f:
                f.write("torch imported" if "torch" in sys.modules else "no torch")
''')


def _survivors(token: str) -> list[int]:
    """Processes still alive whose environment carries ``token``."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if token.encode() in env:
            alive.append(int(entry.name))
    return alive


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"torchcheck-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("TORCHCHECK_TEST_TOKEN", value)
    return value


def test_outcomes_crashes_and_hangs(inner, pytester: pytest.Pytester, token: str, monkeypatch) -> None:
    pytester.makepyfile(test_outcomes=OUTCOMES)
    pytester.makeconftest(CONFTEST)
    state = pytester.path / "parent_state.txt"
    monkeypatch.setenv("TORCHCHECK_TEST_PARENT_STATE", str(state))
    started = time.monotonic()
    result = inner.run("-p", "no:randomly", "-rA")
    elapsed = time.monotonic() - started
    outcomes = inner.outcomes(result)
    assert outcomes == {
        "test_fixtures": "PASSED", "test_world_size_from_parametrize[1]": "PASSED",
        "test_world_size_from_parametrize[3]": "PASSED", "test_parametrized[2]": "PASSED",
        "test_parametrized[5]": "PASSED", "test_root_cause": "FAILED", "test_xfail": "XFAIL",
        "test_segfault": "FAILED", "test_exit_code": "FAILED", "test_killed": "FAILED",
        "test_method": "PASSED", "test_imperative_xfail": "XFAIL", "test_hang": "FAILED",
        "test_after_hang": "PASSED", "test_plain": "PASSED"}, result.stdout.str()
    text = result.stdout.str()
    # Root cause first, with its traceback; the consequence after, marked as such.
    root = inner.message(result, "test_root_cause")
    root.fnmatch_lines(["ValueError: boom on rank 1"])
    section = _section(text, "test_root_cause")
    # The consequence, rank 0's all_reduce broken by rank 1's exit, is one line.
    assert section.index("rank 1 of 2 failed first, in call (root cause)") < section.index("boom on rank 1") \
        < section.index("rank 0 of 2: failed in call at test_outcomes.py:")
    assert re.search(r"^rank 0 of 2: failed in call at test_outcomes.py:\d+ \(consequence\): RuntimeError: .*"
                     r"Connection closed by peer", section, re.M), section
    assert "FAILED test_outcomes.py::test_root_cause - [rank 1 of 2, root cause] ValueError: boom on rank 1" in text
    # A skip in one rank is a skip, with its reason and rank.
    assert re.search(r"SKIPPED \[1\] test_outcomes.py:\d+: no second device \[rank 1 of 2\]", text), text
    assert "XFAIL test_outcomes.py::test_xfail - known bad all-reduce [all 2 ranks]" in text
    # Crashes are failures that name the signal or exit code and show the last output.
    segv = _section(text, "test_segfault")
    assert "rank 0 of 2 (pid" in segv and "died with signal 11 (SIGSEGV" in segv and "(root cause)" in segv
    assert "rank 0 about to crash" in segv
    assert "Fatal Python error: Segmentation fault" in segv  # faulthandler's dump from the dying rank
    assert "died with exit code 7" in _section(text, "test_exit_code")
    assert "rank 1 of 2 (pid" in _section(text, "test_killed")
    assert "died with signal 9 (SIGKILL; killed, often by the out-of-memory killer)" in _section(text, "test_killed")
    assert "XFAIL test_outcomes.py::TestInAClass::test_imperative_xfail - rank 0 knows this is broken [rank 0 of 2]" \
        in text
    # A hang: both stacks, pointing into the test, then the ranks are killed and the session goes on.
    hang = _section(text, "test_hang")
    assert "distributed test timed out after 4 s; the ranks were killed" in hang
    assert hang.count("in test_hang") >= 2 and "rank 0 of 2" in hang and "rank 1 of 2" in hang
    assert "FAILED test_outcomes.py::test_hang - timed out after 4 s: rank(s) 0, 1 still running" in text
    # The report section, with the world size and a rerun command.
    assert "world size: 2" in segv and "rerun: cd " in segv and "test_outcomes.py::test_segfault" in segv
    assert state.read_text() == "no torch"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert elapsed < 90, f"the session took {elapsed:.0f} s"
    assert _survivors(token) == [], "rank or zygote processes outlived the session"


def _section(text: str, test: str) -> str:
    """The failure section of ``test`` in the terminal output."""
    match = re.search(rf"^_+ {re.escape(test)} _+$(.*?)(?=^_{{3,}} \S+ _{{3,}}$|^=+ )", text, re.S | re.M)
    assert match, f"no failure section for {test}"
    return match.group(1)


POOL = textwrap.dedent('''
    import os

    import pytest

    LOG = os.environ["PID_LOG"]


    def _record(name, rank):
        import torch
        import torch.distributed as dist

        t = torch.ones(1)
        dist.all_reduce(t)
        with open(LOG, "a") as f:
            f.write(f"{name} {rank} {os.getpid()}\\n")


    @pytest.mark.distributed(world_size=2)
    def test_a(rank):
        _record("a", rank)


    @pytest.mark.distributed(world_size=2)
    def test_b(rank):
        _record("b", rank)


    @pytest.mark.distributed(world_size=2)
    def test_fails(rank):
        _record("fails", rank)
        assert rank == 0


    @pytest.mark.distributed(world_size=2)
    def test_c(rank):
        _record("c", rank)


    @pytest.mark.distributed(world_size=2, isolate=True)
    def test_isolated_1(rank):
        _record("i1", rank)


    @pytest.mark.distributed(world_size=2, isolate=True)
    def test_isolated_2(rank):
        _record("i2", rank)
''')


def test_warm_pool_is_reused_and_recycled_after_failure(inner, pytester, monkeypatch, token) -> None:
    pytester.makepyfile(test_pool=POOL)
    log = pytester.path / "pids.log"
    monkeypatch.setenv("PID_LOG", str(log))
    result = inner.run("-p", "no:randomly")
    assert inner.outcomes(result) == {"test_a": "PASSED", "test_b": "PASSED", "test_fails": "FAILED",
                                      "test_c": "PASSED", "test_isolated_1": "PASSED",
                                      "test_isolated_2": "PASSED"}, result.stdout.str()
    pids: dict[str, set[int]] = {}
    for line in log.read_text().splitlines():
        name, _rank, pid = line.split()
        pids.setdefault(name, set()).add(int(pid))
    assert all(len(p) == 2 for p in pids.values()), pids
    assert pids["a"] == pids["b"] == pids["fails"]  # one warm pool serves consecutive tests
    assert pids["c"].isdisjoint(pids["fails"])  # recycled after the failure
    assert pids["i1"].isdisjoint(pids["c"]) and pids["i2"].isdisjoint(pids["i1"])  # fresh ranks per test
    assert _survivors(token) == []


XDIST = textwrap.dedent('''
    import pytest


    @pytest.mark.parametrize("n", range(6))
    @pytest.mark.distributed(world_size=2)
    def test_allreduce(rank, n):
        import torch
        import torch.distributed as dist

        t = torch.full((4,), float(rank + n))
        dist.all_reduce(t)
        assert t.tolist() == [float(1 + 2 * n)] * 4
''')


def test_concurrent_sessions_under_xdist_do_not_collide(inner, pytester, token) -> None:
    pytester.makepyfile(test_xdist=XDIST)
    result = inner.run("-p", "xdist", "-n", "2", "--dist", "load")
    result.assert_outcomes(passed=6)
    assert "2 workers" in result.stdout.str()
    assert _survivors(token) == []


ERRORS = textwrap.dedent('''
    import pytest


    def _make():
        @pytest.mark.distributed(world_size=2)
        def test_inner(rank):
            pass
        return test_inner


    test_closure = _make()
''')

LAMBDA = textwrap.dedent('''
    import pytest

    pytestmark = pytest.mark.distributed(world_size=2)

    test_lambda = lambda rank: None  # noqa: E731
''')

MARKER_ERRORS = textwrap.dedent('''
    import pytest


    @pytest.mark.distributed(world_size=0)
    def test_zero(rank):
        pass


    @pytest.mark.distributed(world_size=2, ranks=3)
    def test_unknown_keyword(rank):
        pass


    @pytest.mark.distributed(world_size=2, backend="mpi")
    def test_backend(rank):
        pass


    @pytest.mark.distributed(timeout=-1)
    def test_timeout(rank):
        pass


    @pytest.mark.distributed(world_size=2, backend="nccl")
    def test_nccl(rank):
        pass


    def test_rank_without_marker(rank):
        pass
''')


def test_bad_markers_and_unshippable_tests_get_clear_errors(inner, pytester) -> None:
    pytester.makepyfile(test_closure=ERRORS, test_markers=MARKER_ERRORS, test_lambda=LAMBDA)
    result = inner.run("--torchcheck-devices=cpu", "--continue-on-collection-errors")
    text = result.stdout.str()
    assert "ERROR collecting test_closure.py" in text
    assert ("@pytest.mark.distributed test test_closure: a closure (a function defined inside another function), "
            "'_make.<locals>.test_inner', cannot be shipped to rank processes") in text
    assert "ERROR collecting test_lambda.py" in text
    assert "@pytest.mark.distributed test test_lambda: a lambda, '<lambda>', cannot be shipped" in text
    outcomes = inner.outcomes(result)
    assert outcomes == {"test_zero": "ERROR", "test_unknown_keyword": "ERROR", "test_backend": "ERROR",
                        "test_timeout": "ERROR", "test_rank_without_marker": "ERROR"}, text
    for pattern in ["*test_zero*world_size=0 must be an integer >= 1*",
                    "*test_unknown_keyword*unknown keyword 'ranks'; valid keywords: world_size, backend, timeout, "
                    "isolate*",
                    "*test_backend*backend='mpi' is not supported; use one of 'gloo', 'nccl'*",
                    "*test_timeout*timeout=-1 must be a positive number of seconds*",
                    "*the 'rank' fixture of test_markers.py::test_rank_without_marker only exists inside the ranks "
                    "of a distributed test*",
                    "SKIPPED*backend='nccl' with world_size=2 needs 2 CUDA devices, found 0*"]:
        result.stdout.fnmatch_lines([pattern])
    assert "Traceback" not in text


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("torchcheck_distributed_timeout", "soon", "expected a positive number of seconds, got 'soon'"),
    ("torchcheck_distributed_isolate", "maybe", "expected true or false, got 'maybe'"),
])
def test_bad_ini_values_are_usage_errors(inner, pytester, key, value, expected) -> None:
    pytester.makeini(f"[pytest]\n{key} = {value}\n")
    pytester.makepyfile("def test_x(): pass")
    result = inner.run()
    inner.assert_usage_error(result, f"*ini option {key} in *tox.ini: {expected}*")


def test_ini_isolate_gives_fresh_ranks_per_test(inner, pytester, monkeypatch) -> None:
    pytester.makeini("[pytest]\ntorchcheck_distributed_isolate = true\n")
    pytester.makepyfile(test_pool=POOL.split("@pytest.mark.distributed(world_size=2)\ndef test_fails")[0])
    log = pytester.path / "pids.log"
    monkeypatch.setenv("PID_LOG", str(log))
    result = inner.run()
    result.assert_outcomes(passed=2)
    pids: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        name, _rank, pid = line.split()
        pids.setdefault(name, set()).add(pid)
    assert pids["a"].isdisjoint(pids["b"])


REFERENCES = textwrap.dedent('''
    import importlib.util

    import pytest


    def _load(path):
        spec = importlib.util.spec_from_file_location("ref", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod


    @pytest.mark.parametrize("path", {paths!r}, ids=["correct", "raises", "collective"])
    @pytest.mark.distributed(world_size=2, timeout=12)
    def test_evaluate(rank, world_size, path):
        mod = _load(path)
        accuracy = mod.evaluate(mod.build_model(), rank, world_size)
        assert 0.0 <= accuracy <= 1.0
''')


def test_references_pass_and_twins_are_caught(inner, pytester) -> None:
    # timeout=12 (a process-group timeout of 9 s): the deadline also covers starting the ranks, which
    # took over 6 s on a busy 2-core machine (the suite's other xdist worker, other jobs).
    paths = [str(FIXTURES / "correct" / "ddp_metrics.py"),
             str(FIXTURES / "buggy" / "ddp_metrics__raises_on_rank_1.py"),
             str(FIXTURES / "buggy" / "ddp_metrics__collective_on_one_rank.py")]
    pytester.makepyfile(test_refs=REFERENCES.format(paths=paths))
    result = inner.run("-p", "no:randomly")
    assert inner.outcomes(result) == {"test_evaluate[correct]": "PASSED", "test_evaluate[raises]": "FAILED",
                                      "test_evaluate[collective]": "FAILED"}, result.stdout.str()
    text = result.stdout.str()
    # The rank-1-only error is the root cause; rank 0's broken all_reduce is its consequence.
    raises = _section(text, "test_evaluate[raises]")
    assert raises.index("rank 1 of 2 failed first, in call (root cause)") < raises.index("RuntimeError: shape") \
        < raises.index("rank 0 of 2: failed in call at ")
    assert re.search(r"^rank 0 of 2: failed in call at \S+ddp_metrics__raises_on_rank_1.py:\d+ \(consequence\): "
                     r"RuntimeError: ", raises, re.M), raises
    assert "logits = model(xs).view(per_rank, CLASSES)" in raises
    # The collective only rank 0 enters: both ranks stuck in different collectives, each shown where.
    stuck = _section(text, "test_evaluate[collective]")
    assert "dist.all_reduce(stats)" in stuck and "dist.barrier()" in stuck
    assert "rank 0 of 2" in stuck and "rank 1 of 2" in stuck and "Timed out" in stuck
    assert "timed out waiting in a collective" in stuck and "a collective that some ranks never entered" in stuck


def test_the_pytest_process_stops_the_ranks_when_killed(pytester, token) -> None:
    """Killing pytest mid-test (as a CI job timeout does) leaves no rank or zygote behind."""
    pytester.makepyfile(test_sleep=textwrap.dedent('''
        import pytest


        @pytest.mark.distributed(world_size=2, timeout=600)
        def test_sleep(rank):
            import time

            time.sleep(600)
    '''))
    proc = pytester.popen([os.sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_sleep.py"],
                          stdout=open(pytester.path / "out.txt", "w"), stderr=open(pytester.path / "err.txt", "w"))
    deadline = time.monotonic() + 60
    while len(_survivors(token)) < 4 and time.monotonic() < deadline:  # pytest, zygote and two ranks
        time.sleep(0.2)
    assert len(_survivors(token)) >= 4, (pytester.path / "err.txt").read_text()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _survivors(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _survivors(token) == []



def test_dash_s_streams_rank_output_while_the_test_runs(pytester) -> None:
    """With ``-s`` each rank's output reaches the terminal as it is written, marked with the rank. The inner
    test waits for a file the outer test creates only after it saw the first line: with the output held
    back until the test ends, it would never come (and the inner test fails after 60 s)."""
    pytester.makepyfile(test_live=textwrap.dedent('''
        import os
        import time

        import pytest


        @pytest.mark.distributed(world_size=2)
        def test_waits_for_a_reader(rank):
            print(f"waiting on rank {rank}", flush=True)
            deadline = time.monotonic() + 60
            while not os.path.exists("go") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert os.path.exists("go"), "nobody saw the output while the test ran"
            print("done", end="")  # no newline: still shown, on its own line
    '''))
    out = open(pytester.path / "out.txt", "w")
    proc = pytester.popen([os.sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "test_live.py"],
                          stdout=out, stderr=open(pytester.path / "err.txt", "w"))
    try:
        deadline = time.monotonic() + 90
        seen = ""
        while time.monotonic() < deadline and proc.poll() is None:
            seen = (pytester.path / "out.txt").read_text()
            if "[rank 0] waiting on rank 0" in seen and "[rank 1] waiting on rank 1" in seen:
                break
            time.sleep(0.1)
        assert "[rank 1] waiting on rank 1" in seen, (seen, (pytester.path / "err.txt").read_text())
        assert "done" not in seen  # the test is still running
        (pytester.path / "go").write_text("")
        assert proc.wait(timeout=60) == 0, (pytester.path / "out.txt").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        out.close()
    text = (pytester.path / "out.txt").read_text()
    assert "[rank 0] done\n" in text and "[rank 1] done\n" in text and "1 passed" in text


TORCHRUN = textwrap.dedent('''
    import os

    import pytest
''') + ALLREDUCE + textwrap.dedent('''


    @pytest.mark.distributed(world_size=2)
    def test_allreduce(rank, world_size, rank_device):
        assert world_size == 2 and str(rank_device) == "cpu" and os.environ["RANK"] == str(rank)
        assert _allreduce(rank + 1) == 3
        print(f"rank {rank} was here")


    @pytest.mark.distributed(world_size=2)
    def test_root_cause(rank):
        if rank == 1:
            raise ValueError("rank 1 broke")
        _allreduce(1)


    @pytest.mark.distributed(world_size=2)
    def test_group_works_after_a_failure(rank):
        assert _allreduce(rank) == 1


    @pytest.mark.distributed(world_size=4)
    def test_needs_four(rank):
        pass


    def test_plain():
        with open(f"plain-rank-{os.environ['RANK']}", "w"):
            pass
''')


def test_torchrun_mode_runs_distributed_tests_collectively(inner, pytester: pytest.Pytester, token: str) -> None:
    """``torchrun -m pytest``: every launched process is a rank; rank 0 prints one combined report."""
    pytester.makepyfile(test_launched=TORCHRUN)
    started = time.monotonic()
    result = pytester.run(os.sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                          "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA", "--tb=short",
                          timeout=180)
    elapsed = time.monotonic() - started
    text = result.stdout.str()
    assert text.count("test session starts") == 1, "only rank 0 prints a report"
    result.stdout.fnmatch_lines_random([
        "PASSED test_launched.py::test_allreduce",
        "FAILED test_launched.py::test_root_cause - [[]rank 1 of 2, root cause[]] ValueError: rank 1 broke",
        "PASSED test_launched.py::test_group_works_after_a_failure",
        "SKIPPED [[]1[]] test_launched.py:*: needs world_size=4, but the launcher started WORLD_SIZE=2 processes",
        "PASSED test_launched.py::test_plain",
    ])
    assert re.search(r"^rank 0 of 2: failed in call at test_launched.py:\d+ \(consequence\): ", text, re.M), text
    assert "rank 1 was here" in text  # rank 1's output travels to rank 0's report
    assert result.ret != 0  # the launcher fails the job
    assert sorted(p.name for p in pytester.path.glob("plain-rank-*")) == ["plain-rank-0"]  # rank 0 only
    # The failing rank leaves the group at once, so rank 0 does not wait out the process-group timeout.
    assert elapsed < 40, f"took {elapsed:.0f} s"
    assert _survivors(token) == []


def test_torchrun_mode_hang_prints_stacks_and_ends_the_job(inner, pytester: pytest.Pytester, token: str) -> None:
    pytester.makepyfile(test_hang=textwrap.dedent('''
        import pytest


        @pytest.mark.distributed(world_size=2, timeout=10)
        def test_hang(rank):
            import time

            while True:
                time.sleep(0.05)
    '''))
    # timeout=10: in torchrun mode the ranks join the group within the process-group timeout (7.5 s
    # here); with timeout=3 (1 s) a rank that started late on a busy machine failed to join.
    started = time.monotonic()
    logs = pytester.path / "logs"
    # Each rank's stderr goes to its own file, so the two stack dumps cannot interleave.
    result = pytester.run(os.sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                          "--log-dir", str(logs), "--redirects", "2", "-m", "pytest", "-p", "no:cacheprovider",
                          timeout=120)
    elapsed = time.monotonic() - started
    errs = sorted(logs.rglob("stderr.log"))
    assert len(errs) == 2, (errs, result.stderr.str())
    for path in errs:  # each rank dumps its own stack, pointing into the test
        err = path.read_text()
        assert "Timeout (0:00:10)!" in err, err
        assert re.search(r'File ".*test_hang.py", line \d+ in test_hang', err), err
    assert result.ret != 0
    assert elapsed < 60, f"took {elapsed:.0f} s"
    assert _survivors(token) == []


RELIABILITY = textwrap.dedent('''
    import subprocess
    import sys
    import time

    import pytest


    @pytest.mark.distributed(world_size=2, timeout=0.5)
    def test_start_given_up(rank):
        pass  # the session's first distributed test: its deadline expires while the ranks start


    @pytest.mark.distributed(world_size=2)
    def test_warm_up(rank):
        pass  # a pool after one given up on; the short deadline below is for the hang, not for starting torch


    @pytest.mark.distributed(world_size=2, timeout=4)
    def test_hang_with_a_session_leader_child(rank):
        # A child in its own session and process group, as `setsid sleep 1001` makes: killing the rank's
        # process group does not reach it.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1001)"], start_new_session=True)
        while True:
            time.sleep(0.05)


    def _interrupt():
        raise KeyboardInterrupt


    @pytest.mark.distributed(world_size=2)
    def test_interrupted(rank):
        if rank == 1:
            _interrupt()


    @pytest.mark.distributed(world_size=100000)
    def test_too_many_ranks(rank):
        pass
''')


def test_setsid_children_interrupts_and_oversized_groups(inner, pytester, token) -> None:
    pytester.makepyfile(test_reliability=RELIABILITY)
    started = time.monotonic()
    result = inner.run("-p", "no:randomly")
    text = result.stdout.str()
    assert inner.outcomes(result) == {"test_start_given_up": "ERROR", "test_warm_up": "PASSED", "test_hang_with_a_session_leader_child": "FAILED",
                                      "test_interrupted": "FAILED", "test_too_many_ranks": "ERROR"}, text
    # The ranks of a pool given up on while starting are killed, not counted as ranks of the next pool.
    result.stdout.re_match_lines([r"ERROR test_reliability.py::test_start_given_up - .*the 2 ranks did not join "
                                  r"the process group in time"])
    # Every process of the hung ranks' trees is killed, a child in its own session too.
    assert _survivors(token) == [], "a rank's child in its own session outlived the session"
    # A KeyboardInterrupt in a rank is that rank's failure, with its traceback, not a death with no output.
    interrupted = _section(text, "test_interrupted")
    assert "rank 1 of 2 failed first, in call (root cause)" in interrupted, interrupted
    assert "in _interrupt" in interrupted and "raise KeyboardInterrupt" in interrupted, interrupted
    assert "died with exit code" not in interrupted
    assert "FAILED test_reliability.py::test_interrupted - [rank 1 of 2, root cause] KeyboardInterrupt" in text
    # A world size no machine here can run is refused before any rank starts, naming the limit.
    result.stdout.re_match_lines([r"ERROR test_reliability.py::test_too_many_ranks - .*world_size=100000 is more ranks than this machine can run as local processes: "
                              r"at most \d+ \(.*\); use a smaller world_size.*"])
    assert "rank logs" not in text
    assert time.monotonic() - started < 90


XDIST_FAILURE = textwrap.dedent('''
    import pytest


    @pytest.mark.distributed(world_size=2)
    def test_root_cause(rank):
        if rank == 1:
            raise ValueError("boom on rank 1")


    def test_plain():
        pass
''')


def test_xdist_summary_and_junit_carry_the_root_exception(inner, pytester) -> None:
    pytester.makepyfile(test_xdist_failure=XDIST_FAILURE)
    result = inner.run("-p", "xdist", "-n", "2", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    # The controller gets the report from a worker: the root exception must survive the trip.
    result.stdout.fnmatch_lines(["FAILED test_xdist_failure.py::test_root_cause - "
                                 "[[]rank 1 of 2, root cause[]] ValueError: boom on rank 1"])
    failure = ElementTree.parse(pytester.path / "junit.xml").find(".//testcase[@name='test_root_cause']/failure")
    assert failure is not None
    assert failure.get("message") == "[rank 1 of 2, root cause] ValueError: boom on rank 1"
    assert "rank 1 of 2 failed first, in call (root cause)" in (failure.text or "")
