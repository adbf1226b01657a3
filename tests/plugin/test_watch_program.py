"""pytest_torchcheck/watch/program.py: a program run as `python` runs it; its objects are freed only after
torch.distributed's threads could finish (a DDP reducer freed first deadlocks with them)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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
outcome = program.run(sys.argv[1], None, [])
print(time.monotonic() - builtins.ENDED[0])
sys.exit(outcome.code)
"""


def _returned_after(tmp_path: Path, imports: str) -> float:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PROGRAM).format(imports=imports))
    r = subprocess.run([sys.executable, "-c", RUNNER, str(script)], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return float(r.stdout.strip().splitlines()[-1])


def test_a_distributed_program_is_left_a_moment_for_its_threads_before_its_objects_go(tmp_path) -> None:
    assert _returned_after(tmp_path, "import torch.distributed") >= 0.04


def test_other_programs_return_at_once(tmp_path) -> None:
    assert _returned_after(tmp_path, "") < 0.04
