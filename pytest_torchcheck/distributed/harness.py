"""The pytest-process side of the DDP harness: the zygote, the rank pools, deadlines and crash detection.

One ``Harness`` per pytest session (per xdist worker). It starts the zygote on the
first distributed test, asks it to fork a pool of ranks per (world size, backend,
process-group timeout), sends each test to every rank and collects what comes
back. The harness enforces each test's deadline itself: on expiry it dumps every
live rank's Python stack (``faulthandler`` on SIGUSR1 writes it even while the
main thread is blocked in C++), kills the ranks' whole process trees and waits until
the zygote has reaped them. A pool is reused only after a test in which every
rank finished cleanly; any failure, crash or hang recycles it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from pytest_torchcheck.distributed import ENV_SOCKET, ENV_WORKER
from pytest_torchcheck.distributed.protocol import describe_status

ZYGOTE_START_TIMEOUT = 180.0  # seconds to import torch and build the rank-side pytest session
GRACE_AFTER_FAILURE = 10.0  # seconds the other ranks get to finish once one rank has failed, skipped or died
STACK_WAIT = 1.0  # seconds to wait for a stack dump
OUTPUT_TAIL = 4000  # characters of a dead rank's output shown
HELLO_TIMEOUT = 10.0  # seconds between a rank connecting and its hello: both are one step, so only a killed rank is slower


class HarnessError(Exception):
    """The harness itself could not run the test (the zygote died, a pool did not start)."""


@dataclass(frozen=True)
class PoolKey:
    world_size: int
    backend: str
    pg_timeout: float


@dataclass
class Rank:
    rank: int
    pid: int
    conn: Connection | None = None
    ready: bool = False


@dataclass
class Pool:
    id: int
    key: PoolKey
    dir: Path
    ranks: dict[int, Rank] = field(default_factory=dict)


@dataclass
class RankResult:
    """What one rank did in one test."""

    rank: int
    pid: int
    reports: list[Any] = field(default_factory=list)  # serialized TestReports, setup/call/teardown
    output: str = ""
    phase: str = "setup"  # the last phase the rank entered
    died: str | None = None  # how the process ended, if it ended without a result
    died_at: float | None = None
    stack: str | None = None  # its Python stack when the harness gave up on it


@dataclass
class TestRun:
    """Everything the harness learnt about one distributed test."""

    world_size: int
    results: dict[int, RankResult]
    started: float
    timed_out: float | None = None  # the deadline in seconds, if it expired (else a hang is a grace expiry)


def _recv_hello(conn: Connection, timeout: float = HELLO_TIMEOUT) -> tuple | None:
    """A rank's first message, or None when it closed or stayed silent: a rank connects and says hello
    in one go, so a silent or closed connection is a rank killed in between (of a pool given up on)."""
    try:
        if not conn.poll(timeout):
            return None
        hello = conn.recv()
    except (EOFError, OSError):
        return None
    if not (isinstance(hello, tuple) and len(hello) == 4 and hello[0] == "hello"):
        return None
    return hello


class Harness:
    def __init__(self, rank_args: list[str], cwd: str, threads: int | None = None,
                 basetemp: Path | None = None, live: Any = None) -> None:
        self.rank_args = rank_args
        self.live = live  # with pytest -s: a text stream the ranks' output is copied to as it is written
        self.cwd = cwd
        self.threads = threads
        self.basetemp = basetemp  # where the ranks' tmp_path folders go (under pytest's own basetemp)
        self.dir = Path(tempfile.mkdtemp(prefix="torchcheck-ddp-"))
        self.server: socket.socket | None = None
        self.zygote: subprocess.Popen | None = None
        self.zconn: Connection | None = None
        self.pool: Pool | None = None
        self.pools = 0
        self.tests = 0
        self.exited: dict[int, tuple[int, float]] = {}  # pid -> (wait status, time seen)
        self.broken: str | None = None  # why the zygote could not start, once it failed

    # ------------------------------------------------------------- zygote
    def _start_zygote(self) -> None:
        if self.zygote is not None and self.zygote.poll() is None and self.zconn is not None:
            return
        if self.broken is not None:
            raise HarnessError(f"{self.broken}\n(the zygote failed earlier in this session; not retried)")
        try:
            self._launch_zygote()
        except HarnessError as e:
            self.broken = str(e)
            raise

    def _launch_zygote(self) -> None:
        self._stop_zygote()
        path = str(self.dir / "harness.sock")
        if os.path.exists(path):
            os.unlink(path)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(128)
        env = dict(os.environ)
        env[ENV_SOCKET] = path
        env[ENV_WORKER] = "zygote"
        env.pop("PYTEST_ADDOPTS", None)
        env.setdefault("GLOO_SOCKET_IFNAME", _loopback_interface())
        env.setdefault("TP_SOCKET_IFNAME", env["GLOO_SOCKET_IFNAME"])
        for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID",
                     "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "PYTEST_CURRENT_TEST"):
            env.pop(name, None)
        log = open(self.dir / "zygote.log", "ab")
        self.zygote = subprocess.Popen([sys.executable, "-m", "pytest_torchcheck.distributed.worker"],
                                       env=env, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT)
        log.close()
        started = time.monotonic()
        conn = self._accept(started + ZYGOTE_START_TIMEOUT, "the zygote")
        hello = conn.recv()
        assert hello[0] == "zygote", hello
        conn.send({"args": self.rank_args, "cwd": self.cwd, "sys_path": list(sys.path)})
        self.zconn = conn
        message = self._recv(conn, started + ZYGOTE_START_TIMEOUT, "the zygote to import torch and pytest")
        if message[0] != "zygote-ready":
            raise HarnessError(f"unexpected message from the zygote: {message!r}")

    def _zygote_failure(self, what: str) -> HarnessError:
        log = self.dir / "zygote.log"
        tail = log.read_text(errors="replace")[-OUTPUT_TAIL:] if log.exists() else ""
        status = self.zygote.poll() if self.zygote is not None else None
        state = f"it exited with code {status}" if status is not None else "it is still running"
        self._stop_zygote()
        return HarnessError(f"torchcheck's rank zygote failed while waiting for {what} ({state}); "
                            f"its output:\n{tail}")

    def _accept(self, deadline: float, what: str) -> Connection:
        assert self.server is not None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._zygote_failure(f"{what} to connect")
            if self.zygote is not None and self.zygote.poll() is not None:
                raise self._zygote_failure(f"{what} to connect")
            self.server.settimeout(min(remaining, 0.2))
            try:
                sock, _ = self.server.accept()
            except socket.timeout:
                continue
            sock.setblocking(True)
            return Connection(sock.detach())

    def _recv(self, conn: Connection, deadline: float, what: str) -> Any:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.zygote is not None and self.zygote.poll() is not None
                                  and not conn.poll(0)):
                raise self._zygote_failure(what)
            if conn.poll(min(remaining, 0.2)):
                try:
                    return conn.recv()
                except (EOFError, OSError):
                    raise self._zygote_failure(what) from None

    def _stop_zygote(self) -> None:
        if self.zconn is not None:
            try:
                self.zconn.send(("exit",))
            except OSError:
                pass
            self.zconn.close()
            self.zconn = None
        if self.zygote is not None:
            try:
                self.zygote.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.zygote.kill()
                self.zygote.wait()
            self.zygote = None
        if self.server is not None:
            self.server.close()
            self.server = None

    def _zygote_message(self) -> None:
        """Handle one message from the zygote: a child exit notice."""
        assert self.zconn is not None
        try:
            message = self.zconn.recv()
        except (EOFError, OSError):
            raise self._zygote_failure("its ranks") from None
        if message[0] == "exited":
            self.exited[message[1]] = (message[2], time.time())

    # -------------------------------------------------------------- pools
    def _start_pool(self, key: PoolKey, path: str, deadline: float) -> Pool:
        self._start_zygote()
        assert self.zconn is not None
        self.pools += 1
        pool = Pool(self.pools, key, self.dir / f"pool{self.pools}")
        pool.dir.mkdir()
        threads = self.threads or max(1, (os.cpu_count() or 1) // key.world_size)
        spec = {"pool": pool.id, "world_size": key.world_size, "backend": key.backend,
                "pg_timeout": key.pg_timeout, "dir": str(pool.dir), "store": str(pool.dir / "store"),
                "preload": [path], "threads": threads,
                "basetemp": str((self.basetemp or self.dir) / f"pool{pool.id}")}
        Path(spec["basetemp"]).mkdir(parents=True, exist_ok=True)
        self.zconn.send(("fork", spec))
        pids: list[int] | None = None
        pending_hello = key.world_size
        waiting = set(range(key.world_size))
        errors: dict[int, str] = {}
        assert self.server is not None
        self.server.settimeout(0)
        while pids is None or pending_hello or waiting:
            if time.monotonic() > deadline:
                if pids is None:
                    # Still forking: its ranks, not killed now, would start and join a later pool.
                    pids = self._forked_pids(pool.id)
                self._kill_pool(pool, pids)
                # The pool's folder is removed with the session: what its logs say goes into the message.
                logs = "".join(f"\nrank {r}'s output:\n{_read_tail(pool.dir / f'rank{r}.log') or '(none)'}"
                               for r in sorted(waiting)[:2])
                raise HarnessError(f"the {key.world_size} ranks did not join the process group in time "
                                   f"(ranks still starting: {_ranges(sorted(waiting))}){logs}")
            conns = [r.conn for r in pool.ranks.values() if r.conn is not None and not r.ready]
            ready = wait([self.zconn, self.server, *conns], timeout=0.2)
            for obj in ready:
                if obj is self.zconn:
                    message = self.zconn.recv()
                    if message[0] == "forked" and message[1] == pool.id:
                        pids = message[2]
                    elif message[0] == "fork-error" and message[1] == pool.id:
                        raise HarnessError(message[2])
                    elif message[0] == "exited":
                        self.exited[message[1]] = (message[2], time.time())
                elif obj is self.server:
                    try:
                        sock, _ = self.server.accept()
                    except (BlockingIOError, socket.timeout):
                        continue
                    sock.setblocking(True)
                    conn = Connection(sock.detach())
                    hello = _recv_hello(conn)
                    if hello is None:  # a rank killed between connecting and saying hello: one given up on
                        conn.close()
                        continue
                    _, pool_id, rank, pid = hello
                    if pool_id != pool.id:  # a rank of a pool given up on: it must not count as one of these
                        conn.close()
                        kill_trees([pid])
                        continue
                    pool.ranks[rank] = Rank(rank, pid, conn)
                    pending_hello -= 1
                else:
                    rank = next(r for r in pool.ranks.values() if r.conn is obj)
                    try:
                        message = obj.recv()
                    except (EOFError, OSError):
                        message = ("init-error", rank.rank, "the rank process exited while joining the group")
                    if message[0] == "ready":
                        rank.ready = True
                    else:
                        errors[rank.rank] = message[2]
                        rank.ready = True
                    waiting.discard(rank.rank)
            if pids is not None:
                dead = [p for p in pids if p in self.exited]
                for pid in dead:
                    for r in pool.ranks.values():
                        if r.pid == pid and not r.ready:
                            errors.setdefault(r.rank, f"exited with {describe_status(self.exited[pid][0])}")
                            waiting.discard(r.rank)
                if len(dead) == len(pids) and (pending_hello or waiting):
                    break
        if errors:
            self._kill_pool(pool, pids or [])
            detail = "\n".join(f"rank {r}: {text}" for r, text in sorted(errors.items()))
            raise HarnessError(f"the process group ({key.backend}, world size {key.world_size}) failed "
                               f"to start:\n{detail}")
        return pool

    def _forked_pids(self, pool_id: int) -> list[int]:
        """The pids of pool ``pool_id``'s ranks, once the zygote has forked them all ([] if it cannot say)."""
        assert self.zconn is not None
        deadline = time.monotonic() + ZYGOTE_START_TIMEOUT
        while time.monotonic() < deadline:
            if not self.zconn.poll(0.2):
                if self.zygote is None or self.zygote.poll() is not None:
                    return []
                continue
            try:
                message = self.zconn.recv()
            except (EOFError, OSError):
                return []
            if message[0] == "exited":
                self.exited[message[1]] = (message[2], time.time())
            elif message[1] == pool_id and message[0] in ("forked", "fork-error"):
                return message[2] if message[0] == "forked" else []
        return []

    def _kill_pool(self, pool: Pool, pids: list[int] | None = None) -> None:
        """Kill every rank of ``pool`` (and their children) and wait until the zygote has reaped them."""
        pids = list(pids if pids is not None else [r.pid for r in pool.ranks.values()])
        for r in pool.ranks.values():
            if r.conn is not None:
                r.conn.close()
                r.conn = None
        kill_trees([pid for pid in pids if pid not in self.exited])
        deadline = time.monotonic() + 10
        while any(pid not in self.exited for pid in pids) and time.monotonic() < deadline:
            if self.zconn is None or not self.zconn.poll(0.1):
                if self.zygote is None or self.zygote.poll() is not None:
                    break
                continue
            self._zygote_message()
        if self.pool is pool:
            self.pool = None

    def _release_pool(self, pool: Pool) -> None:
        """Ask healthy ranks to leave, then make sure they are gone."""
        for r in pool.ranks.values():
            if r.conn is not None:
                try:
                    r.conn.send(("exit",))
                except OSError:
                    pass
        self._kill_pool(pool)

    # -------------------------------------------------------------- tests
    def run(self, nodeid: str, path: str, world_size: int, backend: str, timeout: float,
            isolate: bool) -> TestRun:
        try:
            return self._run(nodeid, path, world_size, backend, timeout, isolate)
        except (HarnessError, OSError):
            if self.pool is not None:  # whatever state it is in, it is not reused
                try:
                    self._kill_pool(self.pool)
                except (HarnessError, OSError):
                    pass
                self.pool = None
            raise

    def _pool_alive(self, pool: Pool) -> bool:
        """Whether every rank of a warm pool is still there (one may have died between tests)."""
        assert self.zconn is not None
        while self.zconn.poll(0):
            self._zygote_message()
        return not any(r.pid in self.exited or r.conn is None for r in pool.ranks.values())

    def _run(self, nodeid: str, path: str, world_size: int, backend: str, timeout: float,
             isolate: bool) -> TestRun:
        started = time.monotonic()
        deadline = started + timeout
        key = PoolKey(world_size, backend, pg_timeout_for(timeout))
        if self.pool is not None and (isolate or self.pool.key != key or not self._pool_alive(self.pool)):
            self._release_pool(self.pool)
        if self.pool is None:
            self.pool = self._start_pool(key, path, deadline)
        pool = self.pool
        self.tests += 1
        test_id = self.tests
        results = {r.rank: RankResult(r.rank, r.pid) for r in pool.ranks.values()}
        run = TestRun(world_size, results, time.time())
        for r in pool.ranks.values():
            assert r.conn is not None
            try:
                r.conn.send(("run", test_id, nodeid, path))
            except OSError:  # it died just now: its exit notice follows
                r.conn = None
        pending = set(results)
        clean = True
        give_up_at = deadline
        stream = _LiveOutput(self.live, pool.dir, test_id, results) if self.live is not None else None
        while pending:
            if stream is not None:
                stream.poll()
            now = time.monotonic()
            if now >= give_up_at:
                if give_up_at == deadline:
                    run.timed_out = timeout
                self._dump_stacks(pool, {r: results[r] for r in pending})
                clean = False
                break
            conns = {pool.ranks[r].conn: r for r in pending if pool.ranks[r].conn is not None}
            assert self.zconn is not None
            ready = wait([self.zconn, *conns], timeout=min(give_up_at - now, 0.5 if stream is None else 0.05))
            for obj in ready:
                if obj is self.zconn:
                    self._zygote_message()
                    continue
                r = conns[obj]
                try:
                    message = obj.recv()
                except (EOFError, OSError):
                    pool.ranks[r].conn = None  # the process is ending; its exit status follows
                    continue
                if message[0] == "phase":
                    results[r].phase = message[3]
                elif message[0] == "result":
                    res = results[r]
                    res.reports, res.output = message[3], message[4]
                    pending.discard(r)
                    outcomes = {rep.get("outcome") for rep in res.reports}
                    if "failed" in outcomes:
                        clean = False  # a failure may leave the group mid-collective: recycle the pool
                    if outcomes != {"passed"} and pending:
                        # Leaving closes its gloo connections: the peers' collectives fail at once
                        # instead of waiting for the process-group timeout.
                        clean = False
                        try:
                            obj.send(("exit",))
                        except OSError:
                            pass
                        pool.ranks[r].conn = None
                        give_up_at = min(give_up_at, time.monotonic() + GRACE_AFTER_FAILURE)
            for r in list(pending):
                pid = pool.ranks[r].pid
                if pid in self.exited:
                    status, when = self.exited[pid]
                    results[r].died, results[r].died_at = describe_status(status), when
                    results[r].output = _read_tail(pool.dir / f"rank{r}-test{test_id}.out")
                    pending.discard(r)
                    clean = False
                    give_up_at = min(give_up_at, time.monotonic() + GRACE_AFTER_FAILURE)
        for r in pending:
            results[r].output = _read_tail(pool.dir / f"rank{r}-test{test_id}.out")
        if stream is not None:
            stream.finish()
        if not clean or isolate:
            (self._release_pool if clean else self._kill_pool)(pool)
        return run

    def _dump_stacks(self, pool: Pool, results: dict[int, RankResult]) -> None:
        sizes = {}
        for r in results:
            path = pool.dir / f"rank{r}.stack"
            sizes[r] = path.stat().st_size if path.exists() else 0
            try:
                os.kill(pool.ranks[r].pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STACK_WAIT
        stacks: dict[int, str] = {}
        while time.monotonic() < deadline and len(stacks) < len(results):
            time.sleep(0.05)
            for r in results:
                path = pool.dir / f"rank{r}.stack"
                if r in stacks or not path.exists():
                    continue
                with open(path, "rb") as f:
                    f.seek(sizes[r])
                    text = f.read().decode(errors="replace")
                if text.strip() and text.rstrip().count("\n") >= 1:
                    time.sleep(0.05)  # let the dump finish
                    with open(path, "rb") as f:
                        f.seek(sizes[r])
                        stacks[r] = f.read().decode(errors="replace")
        for r, res in results.items():
            res.stack = stacks.get(r, "(no stack: the process did not answer SIGUSR1)")

    def close(self) -> None:
        if self.pool is not None:
            self._release_pool(self.pool)
        self._stop_zygote()
        shutil.rmtree(self.dir, ignore_errors=True)


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids of every process on the machine, from ``/proc/<pid>/stat`` (empty without /proc)."""
    tree: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return tree
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it exited meanwhile
        # The command name, in parentheses, may hold spaces and parentheses: the fields follow the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            tree.setdefault(int(fields[1]), []).append(int(name))
    return tree


def descendants(pids: list[int]) -> list[int]:
    """Every process below ``pids``, whatever its session or process group (``setsid`` leaves both)."""
    tree = _children()
    found: list[int] = []
    todo = list(pids)
    while todo:
        for child in tree.get(todo.pop(), ()):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def kill_trees(pids: list[int]) -> None:
    """SIGKILL ``pids``, their process groups and every descendant.

    Killing a rank's process group misses a child that started its own session or group (``setsid``,
    ``start_new_session=True``): it would outlive the test run. A killed parent's orphans are re-parented to
    init and can no longer be found, so the whole tree is first stopped (SIGSTOP: a stopped process forks no
    more children), read again until nothing new appears, and only then killed.
    """
    tree: list[int] = []
    while True:
        new = [pid for pid in [*pids, *descendants(pids)] if pid not in tree]
        if not new:
            break
        _signal(os.kill, new, signal.SIGSTOP)
        tree += new
    _signal(os.killpg, pids, signal.SIGKILL)
    _signal(os.kill, tree, signal.SIGKILL)


def _signal(send: Any, pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            send(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass  # gone already


def _ranges(ranks: list[int]) -> str:
    """``0-3, 7``: a long list of ranks kept short."""
    parts: list[str] = []
    for r in ranks:
        if parts and parts[-1].split("-")[-1] == str(r - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{r}"
        else:
            parts.append(str(r))
    return ", ".join(parts)


RANKS_PER_CPU = 64  # measured: 160 gloo ranks on 2 CPUs start in 17 s, and start-up grows faster than linearly
FILES_PER_RANK = 32  # a rank's own descriptors besides one socket per peer (13 measured), with room to spare


def local_world_size_limit() -> tuple[int, str]:
    """The largest world size this machine can run as local rank processes, and what sets it.

    Every rank holds one gloo socket per peer, so a rank needs about ``world_size`` open files, and so does
    the pytest process (one connection per rank): the soft ``RLIMIT_NOFILE`` caps the world size, and past
    it ranks fail with "Too many open files". Far below it, CPU time does: every rank must start, connect to
    every other rank and run each collective, and past about RANKS_PER_CPU ranks per usable CPU that alone
    takes most of a test's default 60 s deadline.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    by_cpu = RANKS_PER_CPU * cpus
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        soft = -1  # no resource module (Windows): no limit known
    by_files = soft - FILES_PER_RANK if soft > 0 else by_cpu  # RLIM_INFINITY is -1
    if by_files < by_cpu:
        return max(1, by_files), (f"each rank holds an open socket per peer, and the open-file limit "
                                  f"(ulimit -n) is {soft}")
    return by_cpu, f"{RANKS_PER_CPU} ranks per usable CPU, and this machine has {cpus}"


def pg_timeout_for(timeout: float) -> float:
    """The process group's own timeout: shorter than the test deadline, so a stuck collective raises first."""
    return max(0.5, min(timeout * 0.75, timeout - 2.0)) if timeout > 2.0 else max(0.25, timeout * 0.5)


class _LiveOutput:
    """Copies what each rank writes during a test to ``out`` as it comes, each line marked ``[rank N]``.

    Used with ``pytest -s``. A rank writes its test output to ``rank<N>-test<id>.out`` and deletes the
    file after the test; a file opened here stays readable after that, and what was never read from a
    file (one opened too late, or a rank that sent its result first) comes from the rank's result.
    """

    def __init__(self, out: Any, directory: Path, test_id: int, results: dict[int, RankResult]) -> None:
        self.out = out
        self.paths = {r: directory / f"rank{r}-test{test_id}.out" for r in results}
        self.results = results
        self.files: dict[int, Any] = {}
        self.shown: dict[int, int] = dict.fromkeys(results, 0)  # characters of each rank's output shown
        self.partial: dict[int, str] = dict.fromkeys(results, "")

    def poll(self) -> None:
        for r, path in self.paths.items():
            f = self.files.get(r)
            if f is None:
                try:
                    f = self.files[r] = open(path, encoding="utf-8", errors="replace")
                except OSError:
                    continue
            if f is not None:
                self._show(r, f.read())

    def finish(self) -> None:
        self.poll()
        for f in self.files.values():
            f.close()
        for r, res in self.results.items():
            # A rank whose file was never opened here: show what its result carries, minus what was shown.
            if r not in self.files and res.output:
                self._show(r, res.output)
            if self.partial[r]:
                self._write(r, self.partial[r] + "\n")
                self.partial[r] = ""
        self.out.flush()

    def _show(self, r: int, text: str) -> None:
        if not text:
            return
        self.shown[r] += len(text)
        text = self.partial[r] + text
        complete, _, self.partial[r] = text.rpartition("\n")
        if complete:
            self._write(r, complete + "\n")
            self.out.flush()

    def _write(self, r: int, text: str) -> None:
        self.out.write("".join(f"[rank {r}] {line}\n" for line in text.splitlines()))


def _read_tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    if len(text) > OUTPUT_TAIL:
        return f"[... {len(text) - OUTPUT_TAIL} characters cut ...]\n" + text[-OUTPUT_TAIL:]
    return text


def _loopback_interface() -> str:
    """The loopback interface's name ('lo' on Linux, 'lo0' on macOS), so gloo never binds beyond it."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        names = []
    for name in ("lo", "lo0"):
        if name in names:
            return name
    return "lo"
