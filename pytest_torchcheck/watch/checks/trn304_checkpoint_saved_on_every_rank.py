"""TRN304 at run time: two ranks of one process group saved to the same checkpoint path."""

from __future__ import annotations

import hashlib
import os
import socket

from pytest_torchcheck.watch.check import Check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class CheckpointSavedOnEveryRank(Check):
    """
    Observed, under an initialised process group of more than one rank: each `torch.save` to a file
    path. Each rank counts, in the group's own key-value store (the one `init_process_group` set up:
    no collective, nothing waits), the first time it saves to each path, with the machine's name;
    a rank that finds another rank counted the same path on the same machine before it is reported,
    at its `torch.save`. Saving on rank 0 only, per-rank files (`ckpt_rank{rank}.pt`), one rank per
    machine to a local disk, and saving to a buffer are never reported; nor is anything without a
    process group, or with one rank.
    """

    CODE = "TRN304"
    NAME = "checkpoint-saved-on-every-rank"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._counted: set[str] = set()  # the store keys this rank added itself to

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.save", pre=self._saving, direct=True)

    def _saving(self, args: tuple, kwargs: dict) -> None:
        target = args[1] if len(args) > 1 else kwargs.get("f")
        if not isinstance(target, (str, os.PathLike)):
            return
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return
        world, rank = dist.get_world_size(), dist.get_rank()
        if world < 2:
            return
        from torch.distributed import distributed_c10d

        store = distributed_c10d._get_default_store()
        path = os.path.abspath(os.fspath(target))
        digest = hashlib.sha256(f"{socket.gethostname()}\0{path}".encode()).hexdigest()[:24]
        key = f"torchcheck/TRN304/{digest}"
        # add(key, 0) reads the count; this rank adds itself once per path
        count = store.add(key, 0 if key in self._counted else 1)
        self._counted.add(key)
        if count >= 2:
            self.report(self.site(),
                        f"rank {rank} of {world} saved to {os.fspath(target)!r}, a file that {count - 1} other "
                        f"{'rank' if count == 2 else 'ranks'} of the process group saved to on this machine: "
                        "the ranks write the same checkpoint at once and a racing write can leave it "
                        "truncated; save on one rank (if dist.get_rank() == 0:)")
