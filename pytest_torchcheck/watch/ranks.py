"""``torchcheck run`` under ``torchrun``: every rank is watched, one report names which ranks saw what.

``torchrun`` starts one ``torchcheck run`` per rank, each with ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE`` and ``TORCHELASTIC_RUN_ID`` in its environment. Each rank but the node's first
(``LOCAL_RANK`` 0) writes what its watch saw to a folder of this launch (:func:`launch`), prints
nothing of its own and ends once its report was read (:func:`handed_over`); the first waits, once its own program ended, for the other ranks of its node (at
most :data:`WAIT_S` seconds) and reports for them all, each finding naming the ranks that saw it
(:func:`merge`). On one machine that rank is rank 0; on several, each machine's first rank reports for
that machine's ranks (the folder is on its local disk).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

from lint_rules.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

    from lint_rules.diagnostics import Finding

WAIT_S = 30.0  # how long the reporting rank waits for the others after its own program ended


@record(frozen=True)
class Launch:
    """This process's place in a ``torchrun`` launch of several ranks."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    folder: str  # where the ranks of this node and launch leave their reports

    @property
    def reports(self) -> bool:
        """Whether this rank prints the merged report (the node's first rank)."""
        return self.local_rank == 0


def launch(env: Mapping[str, str] | None = None) -> Launch | None:
    """This process's launch when ``torchrun`` started it with more than one rank, else None."""
    env = os.environ if env is None else env
    if "TORCHELASTIC_RUN_ID" not in env:
        return None
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local_rank = int(env.get("LOCAL_RANK", rank))
        local_world = int(env.get("LOCAL_WORLD_SIZE", world))
    except (KeyError, ValueError):  # not torchrun's environment after all
        return None
    if world < 2:
        return None
    # torchelastic's error files of one attempt share its folder: the ranks of this node, this attempt
    error_file = env.get("TORCHELASTIC_ERROR_FILE")
    if error_file:
        key = os.path.dirname(os.path.dirname(os.path.abspath(error_file)))
    else:
        key = "|".join(env.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                                                 "MASTER_ADDR", "MASTER_PORT"))
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"torchcheck-run-{digest}")
    return Launch(rank, world, local_rank, local_world, folder)


def write(where: Launch, findings: list[Finding], errors: list[str], steps: int) -> None:
    """Leave this rank's report for the reporting rank (written whole, then renamed: never read half)."""
    os.makedirs(where.folder, exist_ok=True)
    data = {"rank": where.rank, "steps": steps, "errors": errors, "findings": [f.to_dict() for f in findings]}
    path = os.path.join(where.folder, f"rank-{where.rank}.json")
    fd, partial = tempfile.mkstemp(dir=where.folder, suffix=".partial")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(partial, path)


def handed_over(where: Launch, wait_s: float = WAIT_S) -> bool:
    """Wait until the reporting rank has read this rank's report (it deletes what it reads), at most
    ``wait_s`` seconds; whether it did.

    A rank that wrote its report and ended at once raced its own ``torch.distributed`` threads: a gloo
    thread still letting go of the last step's tensors while the interpreter shuts down aborts the
    process ("terminate called without an active exception"), and ``torchrun`` then stops the reporting
    rank before it reports. Waiting here, with the interpreter alive and the GIL free, is what the
    reporting rank does anyway, and its report is in hand before this rank can end badly."""
    path = os.path.join(where.folder, f"rank-{where.rank}.json")
    deadline = time.monotonic() + wait_s
    while os.path.exists(path):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def collect(where: Launch, since: float, wait_s: float = WAIT_S) -> tuple[dict[int, dict], int]:
    """The other ranks' reports on this node, by rank, written after ``since`` (a file left by an earlier
    launch is older), waiting until there are ``local_world_size - 1`` of them or ``wait_s`` passed; and
    how many are missing. The reports read are deleted."""
    wanted = where.local_world_size - 1
    found: dict[int, dict] = {}
    deadline = time.monotonic() + wait_s
    while True:
        try:
            names = os.listdir(where.folder)
        except FileNotFoundError:
            names = []
        for name in names:
            if not (name.startswith("rank-") and name.endswith(".json")):
                continue
            path = os.path.join(where.folder, name)
            try:
                if os.path.getmtime(path) < since:
                    continue
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
                rank = int(data["rank"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if rank != where.rank and rank not in found:
                found[rank] = data
                try:
                    os.remove(path)
                except OSError:
                    pass
        if len(found) >= wanted or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    try:
        os.rmdir(where.folder)  # left when something else is still in it
    except OSError:
        pass
    return found, max(0, wanted - len(found))


def merge(by_rank: dict[int, list[Finding]], one: str = "rank", many: str = "ranks") -> list[Finding]:
    """One finding per site and code, the lowest rank's message with the ranks that saw it added:
    ``... (ranks 0, 1)`` (``one``/``many``: what a rank is called)."""
    from lint_rules.diagnostics import Finding
    from lint_rules.records import replace

    seen: dict[tuple, tuple[Finding, list[int]]] = {}
    for rank in sorted(by_rank):
        for f in by_rank[rank]:
            key = (f.path, f.cell, f.line, f.column, f.code)
            if key in seen:
                seen[key][1].append(rank)
            else:
                seen[key] = (f, [rank])
    merged = [replace(f, message=f"{f.message} ({one if len(ranks) == 1 else many} "
                                 f"{', '.join(map(str, ranks))})")
              for f, ranks in seen.values()]
    return sorted(merged, key=Finding.sort_key)


def now() -> float:
    """A time to compare files' modification times with (a little early: file systems round them)."""
    return time.time() - 2.0
