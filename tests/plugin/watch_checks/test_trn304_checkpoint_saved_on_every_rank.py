"""TRN304 at run time (pytest_torchcheck/watch/checks/trn304_checkpoint_saved_on_every_rank.py): two ranks
saved to the same checkpoint path. Two ranks need two processes: each runs ``torchcheck run`` on the
program in a gloo group of two (one test, the buggy line and its near misses in one program)."""

from __future__ import annotations

from pathlib import Path

from tests.plugin.watch_helpers import line_of
from tests.plugin.watch_ranks import run_ranks

PROGRAM = """
    import io, os, tempfile
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    state = {"w": torch.zeros(3)}
    torch.save(state, "every_rank.pt")  # <- bug
    dist.barrier()
    torch.save(state, f"ckpt_rank{rank}.pt")  # per-rank shards
    fd, own = tempfile.mkstemp(suffix=".pt", dir=".")
    os.close(fd)
    torch.save(state, own)  # a file of its own, without the rank in its name
    if rank == 0:
        torch.save(state, "rank0.pt")  # the fix
    torch.save(state, io.BytesIO())  # a buffer
    dist.barrier()
    dist.destroy_process_group()
"""


def test_two_ranks_saving_one_path_are_reported_once_at_the_save(tmp_path: Path) -> None:
    codes, by_rank, outs = run_ranks(tmp_path, PROGRAM, "TRN304")
    findings = [f for rank in by_rank for f in rank]
    # whichever rank saved second saw the first's count: one finding, at the buggy line only
    assert sorted(codes) == [0, 1], outs
    assert [(f["code"], f["line"]) for f in findings] == [("TRN304", line_of(PROGRAM, "# <- bug"))], outs
    assert findings[0]["message"].endswith(
        "of 2 saved to 'every_rank.pt', a file that 1 other rank of the process group saved to on this machine: the "
        "ranks write the same checkpoint at once and a racing write can leave it truncated; save on one rank "
        "(if dist.get_rank() == 0:)")
