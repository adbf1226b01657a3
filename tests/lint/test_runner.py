"""Decoding before the no-torch pre-filter (lint_rules/runner.py ``screen``): a file that is not source is
an error or a syntax error whether or not its bytes spell "torch", never a file that passed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def lint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_files_that_never_mention_torch_are_still_decoded_and_checked_for_null_bytes(tmp_path: Path) -> None:
    files = {
        "nul_in_string.py": b'x = 1\ny = "a\0b"\n',
        "nul_in_comment.py": b"x = 1  # a\0b\n",
        "random.py": bytes(range(256)) * 4,
        "utf16.py": "import os\nprint(os.sep)\n".encode("utf-16"),
        "bad_cookie.py": b"# -*- coding: no-such-codec -*-\n\xff = 1\n",  # an unknown codec, bytes not UTF-8
        "broken.ipynb": b'{"cells": [',
        # near misses: source that is fine and never mentions torch is skipped as before
        "plain.py": b"import os\nprint(os.sep)\n",
        "latin1.py": "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1"),
        "utf8.py": "name = 'caf\xe9'\n".encode("utf-8"),
        "future_cookie.py": b"# -*- coding: future_fstrings -*-\nx = 1\n",  # an unknown codec, UTF-8 bytes
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    r = lint("--format", "json", *files, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert sorted((f["path"], f["line"], f["column"], f["code"]) for f in json.loads(r.stdout)) == [
        ("broken.ipynb", 1, 1, "TRN000"), ("nul_in_comment.py", 1, 11, "TRN000"),
        ("nul_in_string.py", 2, 7, "TRN000")]
    errors = sorted(line.split(":")[2].split()[-1] for line in r.stderr.splitlines())
    assert errors == ["bad_cookie.py", "random.py", "utf16.py"], r.stderr
    assert all(line.startswith("torchcheck: error: cannot decode ") for line in r.stderr.splitlines())
    text = lint(*files, cwd=tmp_path)
    assert "Found 3 findings in 3 files (7 files checked); 3 files could not be checked (3 cannot be decoded)" \
        in text.stdout


def test_a_skipped_file_and_a_file_that_mentions_torch_get_the_same_verdict_for_bad_bytes(tmp_path: Path) -> None:
    """Whether the bytes spell "torch" decides only whether a valid file is linted."""
    (tmp_path / "a.py").write_bytes(b'x = "\0"\n')
    (tmp_path / "b.py").write_bytes(b'import torch\nx = "\0"\n')
    (tmp_path / "c.py").write_bytes(b"x = 1\ny = 2\n\xff\n")
    (tmp_path / "d.py").write_bytes(b"import torch\ny = 2\n\xff\n")
    r = lint("--format", "json", ".", cwd=tmp_path)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(r.stdout)] == [
        ("a.py", 1, 6, "TRN000"), ("b.py", 2, 6, "TRN000")]
    assert "cannot decode c.py: byte 0xff at line 3, column 1" in r.stderr
    assert "cannot decode d.py: byte 0xff at line 3, column 1" in r.stderr
