"""pytest_torchcheck/watch/program.py: a program run as `python` runs it; its objects are freed only after
torch.distributed's threads could finish (a DDP reducer freed first deadlocks with them)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import time
{imports}
ENDED.append(time.monotonic())  # the program's last line
"""

# A fresh interpreter: whether torch.distributed is imported is the program's doing alone.
RUNNER = """
import builtins, sys, time
from pytest_torchcheck.watch import program
builtins.ENDED = []
how, target = sys.argv[1:3]
outcome = program.run(target if how != "module" else None, target if how == "module" else None, [])
print(time.monotonic() - builtins.ENDED[0])
sys.exit(outcome.code)
"""


def _returned_after(tmp_path: Path, imports: str, how: str = "script") -> float:
    source = textwrap.dedent(PROGRAM).format(imports=imports)
    if how == "folder":  # a folder with __main__.py, run by runpy as python runs it
        (tmp_path / "app").mkdir()
        (tmp_path / "app" / "__main__.py").write_text(source)
        target, cwd = str(tmp_path / "app"), REPO
    else:
        (tmp_path / "train.py").write_text(source)
        target, cwd = (str(tmp_path / "train.py"), REPO) if how == "script" else ("train", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", RUNNER, how, target], cwd=cwd, capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return float(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("how", ["script", "module", "folder"])
def test_a_distributed_program_is_left_a_moment_for_its_threads_before_its_objects_go(tmp_path, how) -> None:
    assert _returned_after(tmp_path, "import torch.distributed", how) >= 0.04


def test_other_programs_return_at_once(tmp_path) -> None:
    assert _returned_after(tmp_path, "") < 0.04
