"""Ranks the watched program starts itself with ``torch.multiprocessing.spawn`` (or ``start_processes``):
each is watched in its own process, and its findings come back to the program's ``torchcheck run``.

While the watch is active, ``start_processes`` (which ``spawn`` calls) is given a :class:`Watched` in
place of the function each process runs: the process installs its own watch with the same checks,
runs the function, and leaves its findings in a folder of this run (``rank-<process index>.json``,
as :mod:`.ranks` writes them). When the program ended, :meth:`SpawnedRanks.collect` reads them back.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from pytest_torchcheck.watch.events import Events

WAIT_S = 10.0  # for processes that were not joined when the program ended (join=False)


class Watched:
    """What a spawned process runs: the program's function under a watch. Pickled to the process by
    reference (this class) with the function, as ``start_processes`` pickles the function itself."""

    def __init__(self, fn: Callable[..., Any], codes: list[str], folder: str, cwd: str) -> None:
        self.fn = fn
        self.codes = codes
        self.folder = folder
        self.cwd = cwd

    def __call__(self, index: int, *args: Any) -> Any:
        from pytest_torchcheck.watch.ranks import Launch, write
        from pytest_torchcheck.watch.watcher import Watcher

        watcher = Watcher(self.codes)
        watcher.events.sites.cwd = self.cwd  # paths shown as the program's run shows them
        try:
            with watcher:
                return self.fn(index, *args)
        finally:
            write(Launch(index, 0, index, 0, self.folder), watcher.findings, watcher.errors, watcher.events.steps)


class SpawnedRanks:
    """Wraps the function of each process the program starts, and collects what their watches saw."""

    def __init__(self, codes: list[str]) -> None:
        self.codes = codes
        self.folder: str | None = None  # made at the first start
        self.started = 0  # processes started
        self.events: Events | None = None

    def install(self, events: Events) -> None:
        """Wrap ``start_processes`` now, until ``events`` is uninstalled (any time while it is installed)."""
        self.events = events
        import torch.multiprocessing

        module = sys.modules.get("torch.multiprocessing.spawn")
        for owner in (module, torch.multiprocessing):
            if owner is not None and hasattr(owner, "start_processes"):
                events._wrap(owner, "start_processes", self._wrapper)

    def _wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        spawned = self

        def start_processes(fn, args=(), nprocs=1, *rest: Any, **kwargs: Any) -> Any:
            if not isinstance(fn, Watched) and spawned.events is not None and spawned.codes:
                if spawned.folder is None:
                    spawned.folder = tempfile.mkdtemp(prefix="torchcheck-spawned-")
                spawned.started += nprocs
                fn = Watched(fn, spawned.codes, spawned.folder, spawned.events.sites.cwd)
            return original(fn, args, nprocs, *rest, **kwargs)

        return start_processes

    def collect(self) -> tuple[dict[int, dict], int]:
        """Each spawned process's report by its index, and how many sent none (waiting a little for
        processes the program did not join)."""
        if self.folder is None:
            return {}, 0
        import json

        found: dict[int, dict] = {}
        deadline = time.monotonic() + WAIT_S
        while True:
            for name in os.listdir(self.folder):
                if name.startswith("rank-") and name.endswith(".json"):
                    try:
                        with open(os.path.join(self.folder, name), encoding="utf-8") as f:
                            data = json.load(f)
                        found.setdefault(int(data["rank"]), data)
                    except (OSError, ValueError, KeyError, TypeError):
                        continue
            if len(found) >= self.started or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None
        return found, max(0, self.started - len(found))
