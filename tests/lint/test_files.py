"""Which files are linted (lint_rules/files.py): a path named on the command line that cannot be checked
(too large, a directory that cannot be listed) is an error, never a run that passed."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

from lint_rules.limits import MAX_FILE_BYTES

REPO = Path(__file__).resolve().parents[2]
TORCH = "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"  # TRN802


def lint(*args: str, cwd: Path, preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, preexec_fn=preexec_fn,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_file_over_the_size_limit_named_on_the_command_line_is_an_error(tmp_path: Path) -> None:
    """Named explicitly, a file over the limit is reported as too large (exit 2, SARIF unsuccessful) and
    not read; the other files are linted. Found while walking a directory, it stays a warning."""
    with open(tmp_path / "big.py", "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: its size is all that matters, it is never read
    (tmp_path / "a.py").write_text(TORCH)
    r = lint("big.py", "a.py", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"torchcheck: error: cannot read big.py: over the limit of {MAX_FILE_BYTES // 2**20} MiB" in r.stderr
    assert "a.py:2:10: TRN802" in r.stdout
    assert "1 file could not be checked (too large)" in r.stdout and "passed" not in r.stdout
    sarif = lint("--format", "sarif", "big.py", cwd=tmp_path)
    assert sarif.returncode == 2
    assert json.loads(sarif.stdout)["runs"][0]["invocations"][0]["executionSuccessful"] is False
    walked = lint(".", cwd=tmp_path)
    assert walked.returncode == 1 and "torchcheck: warning: skipping big.py:" in walked.stderr


def _without_dac_override() -> None:
    """In the child, before exec: as root, give up the capabilities that let root read any directory
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from the bounding set, so that the exec'd process, still
    uid 0 and owner of the interpreter's files, meets the directory's permissions as a user does."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_directory_named_on_the_command_line_that_cannot_be_listed_is_an_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.py").write_text(TORCH)
    locked.chmod(0)
    try:
        r = lint("locked", cwd=tmp_path, preexec_fn=_without_dac_override if os.geteuid() == 0 else None)
    finally:
        locked.chmod(0o755)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "torchcheck: error: path 'locked' cannot be listed: Permission denied" in r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
