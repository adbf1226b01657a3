"""TRN304 at run time (pytest_torchcheck/watch/checks/trn304_checkpoint_saved_on_every_rank.py): two ranks
saved to the same checkpoint path. Two ranks need two processes: each runs ``torchcheck run`` on the
program in a gloo group of two (one test, the buggy line and its near misses in one program)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.plugin.watch_helpers import line_of

REPO = Path(__file__).resolve().parents[3]

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_saving_one_path_are_reported_once_at_the_save(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent(PROGRAM))
    port = str(_free_port())
    ranks = []
    for rank in range(2):
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "RANK": str(rank),
               "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        env.pop("TORCHELASTIC_RUN_ID", None)
        ranks.append(subprocess.Popen(
            [sys.executable, "-m", "lint_rules", "run", "--select", "TRN304", "--format", "json",
             "--output-file", f"rank{rank}.json", "train.py"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=180) for p in ranks]
    codes = [p.returncode for p in ranks]
    findings = [f for rank in range(2) for f in json.loads((tmp_path / f"rank{rank}.json").read_text())]
    # whichever rank saved second saw the first's count: one finding, at the buggy line only
    assert sorted(codes) == [0, 1], outs
    assert [(f["code"], f["line"]) for f in findings] == [("TRN304", line_of(PROGRAM, "# <- bug"))], outs
    assert findings[0]["message"].endswith(
        "of 2 saved to 'every_rank.pt', a file that 1 other rank of the process group saved to on this machine: the "
        "ranks write the same checkpoint at once and a racing write can leave it truncated; save on one rank "
        "(if dist.get_rank() == 0:)")
