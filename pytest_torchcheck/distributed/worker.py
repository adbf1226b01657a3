"""The zygote and the rank processes: ``python -m pytest_torchcheck.distributed.worker``.

The pytest process starts one zygote per session. The zygote imports torch,
``torch.distributed`` and pytest, builds a pytest session with the parent's
rootdir, ini file and plugins, imports the test modules it is asked to, and
then forks rank processes on request: a warm pool that serves many tests, or
fresh ranks for one test (``isolate=True``). It never initialises CUDA, so
forking is safe; a rank may initialise CUDA after the fork.

A rank joins a real process group (a ``FileStore`` in the pool's private
directory), then runs the tests it is sent as real pytest items (fixtures,
conftest files, parametrization and markers all apply) and sends back the
serialized reports and its captured output.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable

from pytest_torchcheck.distributed import context
from pytest_torchcheck.distributed import ENV_SOCKET, ENV_WORKER
from pytest_torchcheck.distributed.protocol import connect, die_with_parent

OUTPUT_LIMIT = 200_000  # characters of a rank's captured output sent back per test (the tail is kept)


class _PhaseNotifier:
    """Tells the parent which phase a rank is in, so a crash is reported against the right one."""

    def __init__(self) -> None:
        self.send: Callable[[str], None] | None = None
        self.phase = "setup"
        self.reports: list[Any] = []  # the reports of the test running now, phase by phase

    def _notify(self, when: str) -> None:
        self.phase = when
        if self.send is not None:
            self.send(when)

    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:  # a wrapper: marked in RankSession
        report = yield
        self.reports.append(report)
        return report

    def pytest_runtest_setup(self, item: Any) -> None:
        self._notify("setup")

    def pytest_runtest_call(self, item: Any) -> None:
        self._notify("call")

    def pytest_runtest_teardown(self, item: Any) -> None:
        self._notify("teardown")


class RankSession:
    """A pytest session that runs single items by node id, built once in the zygote."""

    def __init__(self, args: list[str]) -> None:
        import pytest
        from _pytest.config import _prepareconfig

        # Marked here, not with a decorator: pytest is imported only once the zygote has the parent's sys.path.
        pytest.hookimpl(wrapper=True)(_PhaseNotifier.pytest_runtest_makereport)
        self.notifier = _PhaseNotifier()
        self.config = _prepareconfig(list(args), plugins=[self.notifier])
        self.config._do_configure()
        # Options such as --tb stay parsed; nothing is printed (results go back to the pytest process).
        self.config.pluginmanager.unregister(name="terminalreporter")
        self.session = pytest.Session.from_config(self.config)
        self.config.hook.pytest_sessionstart(session=self.session)
        self.items: dict[str, Any] = {}
        self.errors: dict[str, str] = {}  # path -> collection error text
        self.collected: set[str] = set()

    def collect(self, path: str) -> None:
        """Collect (and import) one test file; its items are found by node id afterwards."""
        if path in self.collected:
            return
        self.collected.add(path)
        failures: list[str] = []

        class _Collect:
            @staticmethod
            def pytest_collectreport(report: Any) -> None:
                if report.failed:
                    failures.append(str(report.longrepr))

        plugin = _Collect()
        self.config.pluginmanager.register(plugin)
        try:
            items = self.session.perform_collect([path])
        except Exception as e:  # UsageError("found no collectors") and the like
            items = []
            failures.append(f"{type(e).__name__}: {e}")
        finally:
            self.config.pluginmanager.unregister(plugin)
        for item in items:
            self.items[item.nodeid] = item
        if failures:
            self.errors[path] = "\n".join(failures)

    def set_basetemp(self, path: Path) -> None:
        """Each rank gets its own ``tmp_path`` root."""
        from _pytest.tmpdir import TempPathFactory

        old = getattr(self.config, "_tmp_path_factory", None)
        self.config._tmp_path_factory = TempPathFactory(
            given_basetemp=path, retention_count=getattr(old, "_retention_count", 3),
            retention_policy=getattr(old, "_retention_policy", "all"), trace=self.config.trace.get("tmpdir"),
            _ispytest=True)

    def run(self, nodeid: str, path: str, notify: Callable[[str], None]) -> list[dict]:
        from _pytest.reports import TestReport
        from _pytest.runner import runtestprotocol

        self.collect(path)
        item = self.items.get(nodeid)
        if item is None:
            why = self.errors.get(path) or "no item with this node id was collected"
            report = TestReport(nodeid, (path, None, nodeid), {}, "failed",
                                f"torchcheck: the rank process could not collect {nodeid}:\n{why}", "setup")
            reports = [report]
        else:
            self.notifier.send = notify
            self.notifier.phase, self.notifier.reports = "setup", []
            try:
                reports = runtestprotocol(item, nextitem=None, log=False)
            except KeyboardInterrupt:
                # pytest lets KeyboardInterrupt through its runner, and the rank would die with exit code 1
                # and no traceback: report it as the failure of the phase it interrupted, with its traceback.
                reports = self.notifier.reports + [self._interrupted(item, self.notifier.phase)]
            finally:
                self.notifier.send = None
        hook = self.config.hook
        return [hook.pytest_report_to_serializable(config=self.config, report=r) for r in reports]


    @staticmethod
    def _interrupted(item: Any, when: str) -> Any:
        from _pytest._code import ExceptionInfo
        from _pytest.reports import TestReport

        longrepr = item.repr_failure(ExceptionInfo.from_current())
        return TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, "failed", longrepr, when)


# ------------------------------------------------------------------- ranks
def _rank_main(rank: int, spec: dict, state: RankSession, sock_path: str) -> None:
    """Body of a forked rank process; never returns."""
    code = 0
    try:
        os.setpgid(0, 0)  # killing the rank's process group also kills its DataLoader workers
        die_with_parent()
        directory = Path(spec["dir"])
        log = os.open(directory / f"rank{rank}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        faulthandler.enable(file=2, all_threads=True)  # fd 2 is the test's output file while a test runs
        stack = os.open(directory / f"rank{rank}.stack", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True)
        conn = connect(sock_path)
        conn.send(("hello", spec["pool"], rank, os.getpid()))
        world_size = spec["world_size"]
        device = f"cuda:{rank}" if spec["backend"] == "nccl" else "cpu"
        os.environ.update({ENV_WORKER: "rank", "RANK": str(rank), "LOCAL_RANK": str(rank),
                           "WORLD_SIZE": str(world_size), "LOCAL_WORLD_SIZE": str(world_size),
                           "GROUP_RANK": "0"})
        state.set_basetemp(Path(spec["basetemp"]) / f"rank{rank}")
        try:
            group = _init_group(rank, spec)
        except BaseException:
            conn.send(("init-error", rank, traceback.format_exc()))
            code = 1
            return
        context.CURRENT = context.RankContext(rank, world_size, spec["backend"], device, "harness", group)
        conn.send(("ready", rank))
        _serve(rank, conn, state, directory, log)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _init_group(rank: int, spec: dict) -> Any:
    import datetime

    import torch
    import torch.distributed as dist

    torch.set_num_threads(spec["threads"])
    if spec["backend"] == "nccl":
        torch.cuda.set_device(rank)
    store = dist.FileStore(spec["store"], spec["world_size"])
    dist.init_process_group(spec["backend"], store=store, rank=rank, world_size=spec["world_size"],
                            timeout=datetime.timedelta(seconds=spec["pg_timeout"]))
    return dist.group.WORLD


def _serve(rank: int, conn: Connection, state: RankSession, directory: Path, log: int) -> None:
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] != "run":
            return  # "exit"
        _, test_id, nodeid, path = message
        out_path = directory / f"rank{rank}-test{test_id}.out"
        out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out, 1)
        os.dup2(out, 2)
        try:
            reports = state.run(nodeid, path, lambda when: conn.send(("phase", test_id, rank, when)))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(out)
        output = out_path.read_text(errors="replace")
        out_path.unlink()
        if len(output) > OUTPUT_LIMIT:
            output = f"[... {len(output) - OUTPUT_LIMIT} characters cut ...]\n" + output[-OUTPUT_LIMIT:]
        conn.send(("result", test_id, rank, reports, output))


# ------------------------------------------------------------------ zygote
def _zygote() -> None:
    sock_path = os.environ[ENV_SOCKET]
    die_with_parent()
    conn = connect(sock_path)
    conn.send(("zygote", os.getpid()))
    setup = conn.recv()
    os.chdir(setup["cwd"])
    sys.path[:] = setup["sys_path"]
    import importlib

    for module in ("torch", "torch.distributed", "torch.nn", "torch.optim"):  # preloaded for every rank
        importlib.import_module(module)

    state = RankSession(setup["args"])
    conn.send(("zygote-ready",))
    children: set[int] = set()
    while True:
        if wait([conn], timeout=0.02):
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message[0] == "fork":
                spec = message[1]
                for path in spec["preload"]:
                    state.collect(path)
                if _cuda_initialised():
                    conn.send(("fork-error", spec["pool"], "CUDA was initialised while importing the test modules "
                               f"{spec['preload']}; ranks cannot be forked safely after that"))
                    continue
                pids = []
                for rank in range(spec["world_size"]):
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        conn.close()
                        _rank_main(rank, spec, state, sock_path)
                    pids.append(pid)
                    children.add(pid)
                conn.send(("forked", spec["pool"], pids))
            elif message[0] == "exit":
                break
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            children.discard(pid)
            conn.send(("exited", pid, status))
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def _cuda_initialised() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        return False


if __name__ == "__main__":
    os.environ[ENV_WORKER] = "zygote"
    _zygote()
