"""What the linter will not lint as if it were valid (lint_rules/limits.py): source the Python running
torchcheck rejects although LibCST reads it, and NUL bytes, are TRN000 where they are; never linted, never
fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXABLE = "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"  # TRN802, a safe fix


def lint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_source_libcst_reads_but_python_rejects_is_a_syntax_error_and_is_not_fixed(tmp_path: Path) -> None:
    files = {
        # a line of blanks ending in a backslash: no Python accepts it; LibCST does
        "blank_continuation.py": FIXABLE + "x = 1\n  \\\ny = 2\n",
        # a same-quote nested f-string: Python 3.12 syntax
        "nested_fstring.py": FIXABLE + 'x = f"{"a"}"\n',
        "clean.py": FIXABLE,  # near miss: the fix still applies
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    r = lint("--format", "json", *files, cwd=tmp_path)
    found = sorted((f["path"], f["line"], f["code"]) for f in json.loads(r.stdout))
    expected = [("blank_continuation.py", 5, "TRN000"), ("clean.py", 2, "TRN802")]
    expected += [("nested_fstring.py", 3, "TRN000")] if sys.version_info < (3, 12) else \
        [("nested_fstring.py", 2, "TRN802")]
    assert found == sorted(expected), r.stdout + r.stderr
    fixed = lint("--fix", *files, cwd=tmp_path)
    assert fixed.returncode == 1
    assert (tmp_path / "blank_continuation.py").read_text() == files["blank_continuation.py"]
    if sys.version_info < (3, 12):
        assert (tmp_path / "nested_fstring.py").read_text() == files["nested_fstring.py"]
    assert "torch.amp.GradScaler" in (tmp_path / "clean.py").read_text()


def test_a_null_byte_in_code_is_a_syntax_error_at_its_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_bytes(b"import torch\r\nmodel = torch.nn.Linear(2, 2)\r\nx = 1\0 + 2\n")
    r = lint("t.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.startswith("t.py:3:6: TRN000 [error] SyntaxError: source code cannot contain null bytes\n")


@pytest.mark.parametrize(("source", "rejected"), [
    ("x = 1\n", None),
    ("for x in y:\n    pass\nreturn x\n", None),      # the compiler's objection, not the parser's: a fragment
    ("await main()\n", None),                       # a notebook's top-level await
    ("yield 1\nbreak\n", None),
    ("x = (\n", "'(' was never closed"),
    ("def f(:\n    pass\n", "invalid syntax"),
])
def test_check_target_asks_cpythons_parser(source: str, rejected: str | None) -> None:
    from lint_rules.limits import check_target

    found = check_target(source, "example.py")
    assert (None if found is None else found.msg) == rejected
