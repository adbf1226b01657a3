"""Running a program under ``torchcheck run`` on two ranks of a gloo group: what the tests of checks that
compare ranks use. Two ranks need two processes; each is a ``torchcheck run`` with the environment
``torchrun`` would give it (less ``TORCHELASTIC_RUN_ID``, so that each rank reports for itself)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import processes

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(tmp_path: Path, source: str, select: str, world: int = 2) -> tuple[list[int], list[list[dict]], list]:
    """Each rank's exit code and JSON findings, and their (stdout, stderr)."""
    (tmp_path / "train.py").write_text(textwrap.dedent(source))
    port = str(_free_port())
    ranks = []
    for rank in range(world):
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "RANK": str(rank),
               "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        env.pop("TORCHELASTIC_RUN_ID", None)
        ranks.append(subprocess.Popen(
            [sys.executable, "-m", "lint_rules", "run", "--select", select, "--format", "json",
             "--output-file", f"rank{rank}.json", "train.py"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True))
    try:
        outs = [p.communicate(timeout=180) for p in ranks]
    except subprocess.TimeoutExpired:  # a rank waiting on one that is gone: end both, and what they started
        for p in ranks:
            processes.kill_session(p)
        pytest.fail(f"the ranks ran past 180 s: {[p.communicate() for p in ranks]}")
    findings = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(world)]
    return [p.returncode for p in ranks], findings, outs
