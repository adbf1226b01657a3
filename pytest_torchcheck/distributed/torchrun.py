"""torchrun mode: pytest itself was launched once per rank by torchrun, SLURM or another launcher.

``torchrun --nproc-per-node=N -m pytest ...`` starts N pytest processes with
``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set. Each process
joins the launcher's process group (``env://``) at the first distributed test and
runs every distributed test collectively; tests without the marker run on rank 0
only (deselected elsewhere). After each distributed test every rank sends its
reports to rank 0 over a separate gloo group, and rank 0 prints one combined
report, root cause first, exactly as in the harness mode. Ranks other than 0
print nothing; their exit status still reflects their own outcome, so the
launcher fails if any rank failed. Each test's deadline is enforced in each rank
with ``faulthandler.dump_traceback_later(exit=True)``: a hung rank prints its
stack and exits, and its launcher tears the job down instead of hanging CI.
"""

from __future__ import annotations

import datetime
import faulthandler
import os
import pickle
import sys
from typing import Any

import pytest


RESULT_TIMEOUT_MARGIN = 10.0  # seconds rank 0 waits for the others' reports beyond the test's deadline


class TorchrunSession:
    """Registered as a plugin in each launched pytest process."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", self.rank))
        self.backend: str | None = None
        self.store: Any = None
        self.base_store: Any = None
        self.generation = 0
        self.tests = 0
        # The real stderr, taken while pytest's capture is suspended: a hung rank's stack must reach the
        # launcher's log, not the capture file of the test that hung.
        self.stderr_fd = os.dup(2)

    def silence(self, config: pytest.Config) -> None:
        """Ranks other than 0 print nothing: rank 0's report covers every rank."""
        if self.rank != 0:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                config.pluginmanager.unregister(reporter)

    def pytest_report_header(self, config: pytest.Config) -> str:
        return (f"torchcheck distributed: launched by torchrun/launcher, world size {self.world_size}; distributed "
                f"tests run in all ranks, other tests on rank 0 only; this report is rank 0's")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.rank == 0:
            return
        keep = [i for i in items if i.get_closest_marker("distributed") is not None]
        dropped = [i for i in items if i.get_closest_marker("distributed") is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep

    def _init(self, backend: str, timeout: float) -> None:
        import torch
        import torch.distributed as dist
        from torch.distributed import distributed_c10d

        from pytest_torchcheck.distributed import context
        from pytest_torchcheck.distributed.harness import pg_timeout_for

        pg_timeout = datetime.timedelta(seconds=pg_timeout_for(timeout))
        if self.base_store is None:
            # torch._dynamo, imported after a group exists (DDP imports it on first use), keeps references to
            # the default group: destroy_process_group() then cannot free it, and its gloo threads run on
            # into interpreter shutdown, which now and then aborts the process ("terminate called without
            # an active exception"). Imported first, it does not (torch 2.13; about 0.9 s once per rank).
            import torch._dynamo  # noqa: F401
            if backend == "nccl":
                torch.cuda.set_device(self.local_rank)
            dist.init_process_group(backend, init_method="env://", timeout=pg_timeout)
            self.backend = backend
            self.base_store = distributed_c10d._get_default_store()
            # Reports travel through the launch's key-value store, not a process group, so a test that broke
            # the group (or a rank that died) cannot keep them from rank 0.
            self.store = dist.PrefixStore("torchcheck-reports/", self.base_store)
        elif not dist.is_initialized():
            # After a failed test every rank left the group; all join a fresh one under a new key prefix.
            store = dist.PrefixStore(f"torchcheck-group-{self.generation}/", self.base_store)
            dist.init_process_group(backend, store=store, rank=self.rank, world_size=self.world_size,
                                    timeout=pg_timeout)
        device = f"cuda:{self.local_rank}" if backend == "nccl" else "cpu"
        context.CURRENT = context.RankContext(self.rank, self.world_size, backend, device, "torchrun",
                                              dist.group.WORLD)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        from pytest_torchcheck.distributed.marker import PROBLEM, spec_or_problem

        spec = spec_or_problem(item)
        if spec is None:
            return None
        if spec["world_size"] != self.world_size:
            item.stash[PROBLEM] = ("skip", f"needs world_size={spec['world_size']}, but the launcher started "
                                           f"WORLD_SIZE={self.world_size} processes")
            return None
        if self.backend is not None and spec["backend"] != self.backend:
            item.stash[PROBLEM] = ("skip", f"needs backend={spec['backend']!r}, but this launch's process group "
                                           f"uses {self.backend!r} (set by the first distributed test)")
            return None
        self._init(spec["backend"], float(spec["timeout"]))
        self._run(item, nextitem, spec)
        return True

    def _run(self, item: pytest.Item, nextitem: pytest.Item | None, spec: dict) -> None:
        import time

        from _pytest.runner import runtestprotocol

        from pytest_torchcheck.distributed.harness import RankResult, TestRun
        from pytest_torchcheck.distributed.merge import merge
        from pytest_torchcheck.core import report_section

        config = item.config
        started = time.time()
        faulthandler.dump_traceback_later(float(spec["timeout"]), exit=True, file=self.stderr_fd)
        try:
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
        finally:
            faulthandler.cancel_dump_traceback_later()
        clean = all(r.passed for r in reports)
        if not clean:
            # Leaving the group closes its connections: the peers' pending collectives fail at once instead
            # of waiting for the process-group timeout.
            self._leave_group()
        serialized = [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]
        sections: dict[str, str] = {}
        for report in reports:  # later reports repeat the earlier phases' captures
            sections.update((title, content) for title, content in report.sections if title.startswith("Captured"))
        output = "".join(sections.values())
        self.tests += 1
        prefix = f"{self.tests}/"
        self.store.set(f"{prefix}{self.rank}", pickle.dumps((os.getpid(), serialized, output)))
        if self.rank != 0:
            for report in reports:  # no terminal here; this sets the process's exit status
                item.ihook.pytest_runtest_logreport(report=report)
            self._follow_verdict(prefix, float(spec["timeout"]))
            return
        keys = [f"{prefix}{r}" for r in range(self.world_size)]
        try:
            self.store.wait(keys, datetime.timedelta(seconds=float(spec["timeout"]) + RESULT_TIMEOUT_MARGIN))
        except RuntimeError:
            pass  # some rank never reported: it died, or hung and was stopped by its own deadline
        gathered = [pickle.loads(self.store.get(k)) if self.store.check([k]) else None for k in keys]
        lost = "an unknown status: no report reached rank 0 (a hung rank prints its stack to its stderr)"
        everyone_passed = all(p is not None and all(rep.get("outcome") == "passed" for rep in p[1])
                              for p in gathered)
        self.store.set(f"{prefix}verdict", b"keep" if everyone_passed else b"rejoin")
        if not everyone_passed:
            self._rejoin()
        results = {}
        for r, payload in enumerate(gathered):
            if payload is None:
                res = RankResult(r, 0, died=lost, died_at=time.time(), phase="call")
            else:
                res = RankResult(r, payload[0], reports=payload[1], output=payload[2])
            results[r] = res
        run = TestRun(self.world_size, results, started)
        merged = merge(item, run, lambda d: config.hook.pytest_report_from_serializable(config=config, data=d),
                       lambda: report_section(item, world_size=self.world_size))
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in merged:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    def _follow_verdict(self, prefix: str, timeout: float) -> None:
        """Wait for rank 0's word on the group: keep it, or every rank leaves it and a fresh one is formed."""
        try:
            self.store.wait([f"{prefix}verdict"], datetime.timedelta(seconds=timeout + 2 * RESULT_TIMEOUT_MARGIN))
            verdict = self.store.get(f"{prefix}verdict")
        except RuntimeError:
            verdict = b"rejoin"
        if verdict != b"keep":
            self._rejoin()

    def _leave_group(self) -> None:
        import gc

        import torch.distributed as dist

        from pytest_torchcheck.distributed import context

        context.CURRENT = None  # it holds the group: the connections close only when the last reference goes
        if dist.is_initialized():
            dist.destroy_process_group()
        gc.collect()

    def _rejoin(self) -> None:
        self._leave_group()
        self.generation += 1

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        dist = sys.modules.get("torch.distributed")
        if self.store is not None:
            # Nobody leaves before rank 0 has printed the report: a launcher tears every rank down as soon as
            # one exits with a failure.
            if self.rank == 0:
                self.store.set("done", b"1")
            else:
                try:
                    self.store.wait(["done"], datetime.timedelta(seconds=600))
                except RuntimeError:
                    pass
        if dist is not None and dist.is_initialized():
            dist.destroy_process_group()
