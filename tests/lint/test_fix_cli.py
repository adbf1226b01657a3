"""Fixes: ``--fix``, ``--unsafe-fixes``, ``--diff``, ``--show-fixes``, ``--exit-non-zero-on-fix``,
run as a subprocess the way users and pre-commit call them, plus the fix engine's own guarantees
(overlaps, fixed point, a pass that would break the file, atomic writes)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from lint_rules import lint_source
from lint_rules.diagnostics import SAFE, Edit, FileResult, Finding, Fix
from lint_rules.fixes import apply, fix_until_stable
from tests.lint.test_cli import REPO, run, write

# One safe fix (TRN802), one unsafe fix (TRN701), one finding without a fix (TRN101 needs none here:
# TRN301 has no fix).
MIXED = textwrap.dedent(
    """\
    import torch
    scaler = torch.cuda.amp.GradScaler(enabled=True)
    state = torch.load("ckpt.pt", weights_only=False)
    model = torch.nn.DataParallel(model)
    """
)
SAFE_FIXED = MIXED.replace("torch.cuda.amp.GradScaler(enabled=True)", 'torch.amp.GradScaler("cuda", enabled=True)')
ALL_FIXED = SAFE_FIXED.replace("weights_only=False", "weights_only=True")
ONLY_SAFE = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


def test_fix_applies_safe_fixes_and_reports_the_rest(tmp_path):
    write(tmp_path, {"t.py": MIXED})
    r = run("lint", "--fix", "t.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # findings remain
    assert (tmp_path / "t.py").read_text() == SAFE_FIXED
    lines = r.stdout.splitlines()
    assert [line.split(": ", 1)[1][:6] for line in lines if line.startswith("t.py:")] == ["TRN701", "TRN301"]
    assert "Found 3 findings (1 fixed, 2 remaining); 1 file checked." in lines
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in lines
    again = run("lint", "--fix", "t.py", cwd=tmp_path)
    assert (tmp_path / "t.py").read_text() == SAFE_FIXED and "fixed" not in again.stdout


def test_unsafe_fixes_with_fix_apply_them_too(tmp_path):
    write(tmp_path, {"t.py": MIXED})
    r = run("lint", "--fix", "--unsafe-fixes", "--show-fixes", "t.py", cwd=tmp_path)
    assert (tmp_path / "t.py").read_text() == ALL_FIXED
    assert r.returncode == 1  # TRN301 has no fix
    assert "Fixed 2 findings:\n- t.py:\n    1 × TRN701 (unsafe-torch-load)\n    1 × TRN802 (deprecated-amp-api)\n" \
        in r.stdout
    # --no-unsafe-fixes wins when given last, as with every on/off pair
    write(tmp_path, {"u.py": MIXED})
    run("lint", "--fix", "--unsafe-fixes", "--no-unsafe-fixes", "u.py", cwd=tmp_path)
    assert (tmp_path / "u.py").read_text() == SAFE_FIXED


def test_unsafe_fixes_setting_in_pyproject(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.torchcheck]\nunsafe-fixes = true\n", "t.py": MIXED, "u.py": MIXED})
    r = run("lint", "--fix", "t.py", cwd=tmp_path)
    assert (tmp_path / "t.py").read_text() == ALL_FIXED, r.stdout + r.stderr
    run("lint", "--fix", "--no-unsafe-fixes", "u.py", cwd=tmp_path)  # the flag wins over the setting
    assert (tmp_path / "u.py").read_text() == SAFE_FIXED
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nunsafe-fixes = "yes"\n'})
    bad = run("lint", "u.py", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "[tool.torchcheck] unsafe-fixes in " in bad.stderr and "must be true or false, got 'yes'" in bad.stderr


def test_fixable_and_unfixable_settings(tmp_path):
    write(tmp_path, {"t.py": MIXED})
    run("lint", "t.py", cwd=tmp_path)  # caches the results with every fix in them
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nunfixable = ["TRN802"]\n'})
    shown = run("lint", "--unsafe-fixes", "t.py", cwd=tmp_path)
    assert "TRN802 [warning] [*]" not in shown.stdout and "TRN701 [error] [*]" in shown.stdout  # a cached result is not reused
    run("lint", "--fix", "--unsafe-fixes", "t.py", cwd=tmp_path)
    assert (tmp_path / "t.py").read_text() == MIXED.replace("weights_only=False", "weights_only=True")
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nfixable = ["TRN8"]\n', "u.py": MIXED})
    run("lint", "--fix", "--unsafe-fixes", "u.py", cwd=tmp_path)
    assert (tmp_path / "u.py").read_text() == SAFE_FIXED  # TRN701's fix is not in fixable
    write(tmp_path, {"pyproject.toml": '[tool.torchcheck]\nunfixable = ["TRN999"]\n'})
    bad = run("lint", "u.py", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "TRN999" in bad.stderr and "[tool.torchcheck] unfixable in " in bad.stderr


def test_unsafe_fixes_alone_only_shows_them(tmp_path):
    write(tmp_path, {"t.py": MIXED})
    plain = run("lint", "t.py", cwd=tmp_path)
    assert "TRN802 [warning] [*] " in plain.stdout and "TRN701 [error] [*]" not in plain.stdout
    assert "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option)." \
        in plain.stdout
    shown = run("lint", "--unsafe-fixes", "t.py", cwd=tmp_path)
    assert "TRN701 [error] [*] " in shown.stdout and "[*] 2 fixable with the `--fix` option." in shown.stdout
    assert (tmp_path / "t.py").read_text() == MIXED  # nothing written without --fix


def test_diff_shows_changes_writes_nothing_and_exits_1(tmp_path):
    write(tmp_path, {"t.py": MIXED, "clean.py": "import torch\n"})
    r = run("lint", "--diff", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "t.py").read_text() == MIXED
    assert r.stdout.startswith("--- t.py\n+++ t.py\n@@ ")
    assert '-scaler = torch.cuda.amp.GradScaler(enabled=True)\n+scaler = torch.amp.GradScaler("cuda", enabled=True)' \
        in r.stdout
    assert "+state" not in r.stdout  # unsafe: not without --unsafe-fixes
    assert "Would fix 1 finding (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in r.stderr
    unsafe = run("lint", "--diff", "--unsafe-fixes", "t.py", cwd=tmp_path)
    assert "+state = torch.load(\"ckpt.pt\", weights_only=True)" in unsafe.stdout
    nothing = run("lint", "--diff", "clean.py", cwd=tmp_path)
    assert nothing.returncode == 0 and nothing.stdout == ""


def test_exit_non_zero_on_fix(tmp_path):
    write(tmp_path, {"a.py": ONLY_SAFE, "b.py": ONLY_SAFE})
    r = run("lint", "--fix", "a.py", cwd=tmp_path)
    assert r.returncode == 0 and "Found 1 finding (1 fixed, 0 remaining)" in r.stdout
    r = run("lint", "--fix", "--exit-non-zero-on-fix", "b.py", cwd=tmp_path)
    assert r.returncode == 1
    r = run("lint", "--fix", "--exit-non-zero-on-fix", "b.py", cwd=tmp_path)
    assert r.returncode == 0  # nothing left to fix


def test_json_carries_fix_and_applicability(tmp_path):
    write(tmp_path, {"t.py": MIXED})
    data = json.loads(run("lint", "--format", "json", "t.py", cwd=tmp_path).stdout)
    fixes = {f["code"]: f["fix"] for f in data}
    assert fixes["TRN301"] is None
    assert fixes["TRN701"] == {"applicability": "unsafe", "message": "Pass weights_only=True to torch.load",
                               "edits": [{"content": "True", "line": 3, "column": 44, "end_line": 3,
                                          "end_column": 49}]}
    assert fixes["TRN802"]["applicability"] == "safe"
    # the edits, applied, give what --fix writes
    lines = MIXED.splitlines(keepends=True)
    e = fixes["TRN802"]["edits"][0]
    assert e["line"] == e["end_line"] == 2
    line = lines[1]
    lines[1] = line[:e["column"] - 1] + e["content"] + line[e["end_column"] - 1:]
    assert "".join(lines) == SAFE_FIXED


def test_stdin_fix_prints_the_fixed_source(tmp_path):
    r = run("lint", "--fix", "--stdin-filename", "src/t.py", "-", cwd=tmp_path, stdin=MIXED)
    assert r.stdout == SAFE_FIXED
    assert "src/t.py:3:9: TRN701" in r.stderr and r.returncode == 1
    r = run("lint", "--diff", "--stdin-filename", "src/t.py", "-", cwd=tmp_path, stdin=MIXED)
    assert r.returncode == 1 and r.stdout.startswith("--- src/t.py\n+++ src/t.py\n")
    clean = run("lint", "--fix", "-", cwd=tmp_path, stdin="import torch\n")
    assert clean.stdout == "import torch\n" and clean.returncode == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--fix", "-", "a.py"], "--fix with standard input ('-') writes the fixed source to standard output"),
    (["--diff", "--format", "json", "a.py"], "--diff prints a unified diff; it cannot be combined with --format json"),
])
def test_conflicting_fix_flags_are_usage_errors(tmp_path, args, message):
    write(tmp_path, {"a.py": MIXED})
    r = run("lint", *args, cwd=tmp_path, stdin=MIXED)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "a.py").read_text() == MIXED


def test_fix_keeps_line_endings_permissions_encoding_and_symlinks(tmp_path):
    crlf = MIXED.replace("\n", "\r\n")
    (tmp_path / "crlf.py").write_bytes(crlf.encode())
    os.chmod(tmp_path / "crlf.py", 0o751)
    latin = "# -*- coding: latin-1 -*-\n" + ONLY_SAFE + "s = 'caf\xe9'\n"
    (tmp_path / "latin.py").write_bytes(latin.encode("latin-1"))
    (tmp_path / "real").mkdir()
    write(tmp_path, {"real/target.py": ONLY_SAFE})
    (tmp_path / "link.py").symlink_to(tmp_path / "real" / "target.py")
    r = run("lint", "--fix", "crlf.py", "latin.py", "link.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "crlf.py").read_bytes() == SAFE_FIXED.replace("\n", "\r\n").encode()
    assert stat.S_IMODE((tmp_path / "crlf.py").stat().st_mode) == 0o751
    assert (tmp_path / "latin.py").read_bytes().decode("latin-1") == latin.replace(
        "torch.cuda.amp.autocast()", 'torch.autocast("cuda")')
    assert (tmp_path / "link.py").is_symlink()
    assert 'torch.autocast("cuda")' in (tmp_path / "real" / "target.py").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if "torchcheck-fix" in p.name) == []


_FAILING_WRITE = """
import os, sys
from lint_rules import fixes
{patch}
from lint_rules.cli import main
sys.exit(main(["lint", "--fix", "t.py"]))
"""


@pytest.mark.parametrize("patch", [
    # the rename fails (a read-only directory, a full disk): an error, the original intact
    "def replace(a, b):\n    raise PermissionError(13, 'Permission denied')\nfixes.os.replace = replace",
    # the run is interrupted half-way through writing the temporary file
    "real_fsync = os.fsync\ndef fsync(fd):\n    raise KeyboardInterrupt\nfixes.os.fsync = fsync",
])
def test_failed_or_interrupted_write_leaves_the_original_intact(tmp_path, patch):
    write(tmp_path, {"t.py": MIXED})
    script = _FAILING_WRITE.format(patch=patch)
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (tmp_path / "t.py").read_text() == MIXED
    assert [p.name for p in tmp_path.iterdir() if p.name != ".torchcheck_cache"] == ["t.py"]  # no temp file left
    assert "Traceback" not in r.stderr
    if "replace" in patch:
        assert r.returncode == 2
        assert "torchcheck: error: cannot write t.py: Permission denied; the file was left unchanged" in r.stderr
    else:
        assert r.returncode == 130


def _limit_file_size() -> None:
    """In the CLI's process: every file it writes may hold 16 bytes at most, so the fixed file cannot be
    written (EFBIG), whoever runs the test: a read-only file or directory does not stop root."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))  # Python ignores SIGXFSZ: the write fails instead


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_file_that_cannot_be_written_keeps_its_findings_in_the_report(tmp_path, fmt):
    write(tmp_path, {"t.py": MIXED})
    args = ["lint", "--preview", "--no-cache", "--fix", "--format", fmt, "t.py"]
    r = subprocess.run([sys.executable, "-m", "lint_rules", *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, preexec_fn=_limit_file_size, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (tmp_path / "t.py").read_text() == MIXED
    assert r.returncode == 2
    assert "torchcheck: error: cannot write t.py: File too large; the file was left unchanged" in r.stderr
    left = run("lint", "--no-cache", "--format", fmt, "t.py", cwd=tmp_path).stdout  # what is in the file
    if fmt == "json":
        assert json.loads(r.stdout) == json.loads(left)
        assert sorted(f["code"] for f in json.loads(r.stdout)) == ["TRN301", "TRN701", "TRN802"]
    else:
        assert r.stdout.splitlines()[:3] == left.splitlines()[:3]
        assert r.stdout.splitlines()[3] == ("Found 3 findings in 1 file (1 file checked); 1 file could not be "
                                            "fixed: see the error on standard error.")


def test_cached_results_never_hide_fixes(tmp_path):
    write(tmp_path, {"t.py": MIXED})
    first = run("lint", "t.py", cwd=tmp_path)  # fills the cache
    assert first.returncode == 1 and list((tmp_path / ".torchcheck_cache").rglob("*.json"))
    r = run("lint", "--fix", "t.py", cwd=tmp_path)
    assert (tmp_path / "t.py").read_text() == SAFE_FIXED, r.stdout + r.stderr
    after = run("lint", "--format", "json", "t.py", cwd=tmp_path)  # the fixed file, answered from the cache
    assert sorted(f["code"] for f in json.loads(after.stdout)) == ["TRN301", "TRN701"]
    r = run("lint", "--fix", "--unsafe-fixes", "t.py", cwd=tmp_path)
    assert (tmp_path / "t.py").read_text() == ALL_FIXED


def test_notebooks_are_reported_not_fixed(tmp_path):
    nb = json.dumps({"cells": [{"cell_type": "code", "source": ONLY_SAFE.splitlines(keepends=True)}],
                     "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    write(tmp_path, {"nb.ipynb": nb})
    r = run("lint", "--fix", "nb.ipynb", cwd=tmp_path)
    assert (tmp_path / "nb.ipynb").read_text() == nb
    assert r.returncode == 1 and "nb.ipynb:cell 1:2:6: TRN802 " in r.stdout
    assert "nb.ipynb: 1 fixable finding(s) not fixed: --fix does not edit notebooks" in r.stderr
    data = json.loads(run("lint", "--format", "json", "nb.ipynb", cwd=tmp_path).stdout)
    assert data[0]["fix"] is None


# ------------------------------------------------------------ the fix engine
def _finding(line: int, col: int, end_col: int, content: str, code: str = "TRN900") -> Finding:
    return Finding("t.py", line, col, line, end_col, code, "x", "m", "error",
                   fix=Fix(SAFE, "t", (Edit(line, col, line, end_col, content),)))


def test_overlapping_fixes_wait_for_the_next_pass():
    src = "abcdef\n"
    new, done = apply(src, [_finding(1, 1, 4, "X"), _finding(1, 3, 5, "Y"), _finding(1, 6, 7, "Z")], unsafe=False)
    assert new == "XdeZ\n" and len(done) == 2


def test_nested_fixes_reach_a_fixed_point_in_several_passes(tmp_path):
    src = "import torch\nimport torch.nn.functional as F\ny = torch.log(F.softmax(model.forward(x), dim=1))\n"
    fixed, applied, result, error = fix_until_stable(
        src, lambda text: lint_source(text, "t.py", ["TRN403", "TRN503"]), unsafe=True)
    assert error is None and result.findings == []
    assert fixed.endswith("y = F.log_softmax(model(x), dim=1)\n")
    assert sorted(f.code for f in applied) == ["TRN403", "TRN503"]


def test_a_fix_that_would_break_the_file_is_refused():
    def lint(text: str) -> FileResult:
        return FileResult("t.py", [_finding(1, 5, 6, "(")] if text == "x = 1\n" else [])

    fixed, applied, _, error = fix_until_stable("x = 1\n", lint, unsafe=False)
    assert fixed == "x = 1\n" and applied == [] and "produced invalid code" in error


def test_a_fix_that_never_settles_stops():
    counter = iter(range(100))

    def lint(text: str) -> FileResult:
        return FileResult("t.py", [_finding(1, 1, 2, str(next(counter) % 10))])

    _, applied, _, error = fix_until_stable("0\n", lint, unsafe=False)
    assert len(applied) == 10 and "did not settle" in error


def test_fix_only_fixes_without_reporting_what_is_left(tmp_path):
    write(tmp_path, {"a.py": MIXED, "b.py": MIXED, "c.py": MIXED})
    r = run("lint", "--fix-only", "--show-fixes", "a.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr  # TRN301 and the unsafe TRN701 are left, but not reported
    assert (tmp_path / "a.py").read_text() == SAFE_FIXED
    assert "TRN301" not in r.stdout and "1 × TRN802 (deprecated-amp-api)" in r.stdout
    assert r.stdout.rstrip().endswith("Fixed 1 finding (1 file checked).")
    again = run("lint", "--fix-only", "a.py", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "No fixes applied (1 file checked).\n")
    r = run("lint", "--fix-only", "--unsafe-fixes", "--exit-non-zero-on-fix", "--format", "json", "b.py", cwd=tmp_path)
    assert r.returncode == 1 and json.loads(r.stdout) == []
    assert (tmp_path / "b.py").read_text() == ALL_FIXED
    r = run("lint", "--fix-only", "-", cwd=tmp_path, stdin=MIXED)
    assert r.returncode == 0 and r.stdout == SAFE_FIXED and "Fixed 1 finding" in r.stderr
    r = run("lint", "--fix-only", "c.py", "missing.py", cwd=tmp_path)
    assert r.returncode == 2 and "path 'missing.py' does not exist" in r.stderr  # still an error, up front
    assert (tmp_path / "c.py").read_text() == MIXED  # nothing written
