"""Hostile files, as a user's tree can hold them: special files, link loops, unreadable and
undecodable files, a huge file, pathological nesting, and a run killed while it writes fixes.
Every case runs the CLI as a subprocess with a timeout: a hang fails the test, it never blocks it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.lint.test_cli import DATA_PARALLEL, REPO, run, with_preview, write
from tests.lint.test_fix_cli import MIXED, SAFE_FIXED


def lint(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lint_rules", *with_preview(("lint", "--no-cache", *args))], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


# ------------------------------------------------------------ special files
def test_a_fifo_is_skipped_in_a_walk_and_an_error_when_named(tmp_path):
    write(tmp_path, {"a.py": DATA_PARALLEL})
    os.mkfifo(tmp_path / "pipe.py")  # reading it would block until a writer comes: forever
    r = lint(".", cwd=tmp_path, timeout=30)
    assert r.returncode == 1, r.stderr
    assert "torchcheck: warning: skipping pipe.py: not a regular file (a FIFO)" in r.stderr
    assert "a.py:2:9: TRN301" in r.stdout and "Traceback" not in r.stderr
    # Named explicitly, as a shell glob would pass it: asked for and not checked, so an error of that file.
    r = lint("pipe.py", "a.py", cwd=tmp_path, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "torchcheck: error: cannot read pipe.py: not a regular file (a FIFO)" in r.stderr
    assert "a.py:2:9: TRN301" in r.stdout and "1 file could not be checked (not a regular file)" in r.stdout


# Discovery saw a regular file; by the time it is read, a FIFO has taken its place.
_SWAP_AFTER_DISCOVERY = """
import os, sys
import lint_rules.api as api
from lint_rules import cli

discovered = api.files_of
def files_of(*args, **kwargs):
    files = discovered(*args, **kwargs)
    os.remove("b.py")
    os.mkfifo("b.py")
    return files
api.files_of = files_of
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("args", [["a.py", "b.py"], ["."], ["--fix", "."], ["--format", "json", "."]])
def test_a_fifo_swapped_in_after_discovery_is_an_error_not_a_hang(tmp_path, args):
    write(tmp_path, {"a.py": DATA_PARALLEL, "b.py": DATA_PARALLEL})
    r = subprocess.run([sys.executable, "-c", _SWAP_AFTER_DISCOVERY, "lint", "--no-cache", "--preview", *args],
                       cwd=tmp_path, capture_output=True, text=True, timeout=30,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert os.path.exists(tmp_path / "b.py") and not (tmp_path / "b.py").is_file()  # the swap happened
    assert r.returncode == 2, r.stdout + r.stderr
    assert "torchcheck: error: cannot read b.py: not a regular file (a FIFO)" in r.stderr
    assert "a.py:2:9: TRN301" in r.stdout or '"path": "a.py"' in r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "socket"])
def test_lint_file_on_a_special_file_returns_its_error_without_reading(tmp_path, special):
    """The API reads without discovery in front of it: a FIFO (blocks), /dev/zero (never ends), a socket."""
    script = "from lint_rules.api import lint_file; print(lint_file('x.py').error)"
    sock_dir = Path(tempfile.mkdtemp(dir="/tmp"))  # AF_UNIX paths must be short
    server = socket.socket(socket.AF_UNIX)
    try:
        if special == "fifo":
            os.mkfifo(tmp_path / "x.py")
        elif special == "socket":
            server.bind(str(sock_dir / "s.py"))
            os.symlink(sock_dir / "s.py", tmp_path / "x.py")
        else:
            os.symlink(special, tmp_path / "x.py")
        r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                           timeout=30, env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        server.close()
        shutil.rmtree(sock_dir)
    kind = {"fifo": "a FIFO", "socket": "a socket", "/dev/zero": "a character device"}[special]
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"cannot read x.py: not a regular file ({kind})"


def test_sockets_and_devices_named_py_are_skipped(tmp_path):
    write(tmp_path, {"a.py": DATA_PARALLEL})
    server = socket.socket(socket.AF_UNIX)
    sock_dir = Path(tempfile.mkdtemp(dir="/tmp"))  # AF_UNIX paths must be short
    try:
        server.bind(str(sock_dir / "s.py"))
        os.symlink(sock_dir / "s.py", tmp_path / "sock.py")
        os.symlink("/dev/zero", tmp_path / "zero.py")  # reading it never ends
        r = lint(".", cwd=tmp_path, timeout=30)
    finally:
        server.close()
        shutil.rmtree(sock_dir)
    assert r.returncode == 1, r.stderr
    assert "skipping sock.py: not a regular file (a socket)" in r.stderr
    assert "skipping zero.py: not a regular file (a character device)" in r.stderr


def test_symlink_loops_neither_hang_nor_recurse(tmp_path):
    write(tmp_path, {"pkg/a.py": DATA_PARALLEL})
    os.symlink(".", tmp_path / "pkg" / "self")  # a directory loop
    os.symlink(tmp_path, tmp_path / "pkg" / "up")  # a loop through the parent
    os.symlink("loop2.py", tmp_path / "loop1.py")
    os.symlink("loop1.py", tmp_path / "loop2.py")
    os.symlink("missing.py", tmp_path / "dangling.py")
    r = lint("--format", "json", ".", cwd=tmp_path, timeout=30)
    assert r.returncode == 1, r.stderr
    assert r.stdout.count('"path": "pkg/a.py"') == 1  # linted once, not once per way round the loop
    assert "skipping loop1.py: is a symbolic link loop" in r.stderr
    assert "skipping dangling.py: is a symbolic link to 'missing.py', which does not exist" in r.stderr
    r = lint("loop1.py", cwd=tmp_path)
    assert r.returncode == 2 and "path 'loop1.py' is a symbolic link loop" in r.stderr


# -------------------------------------------------- unreadable, undecodable
def test_an_unreadable_file_is_exit_2_naming_it_and_the_rest_is_linted(tmp_path):
    write(tmp_path, {"a.py": DATA_PARALLEL, "secret.py": DATA_PARALLEL})
    os.chmod(tmp_path / "secret.py", 0o000)
    command = [sys.executable, "-m", "lint_rules", "lint", "--preview", "--no-cache", "."]
    if os.geteuid() == 0:  # root reads every file: drop the capabilities that let it
        command = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", *command]
    r = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "torchcheck: error: cannot read secret.py: Permission denied" in r.stderr
    assert "a.py:2:9: TRN301" in r.stdout
    assert "TRN000" not in r.stdout and "Traceback" not in r.stderr


@pytest.mark.parametrize(("data", "message"), [
    (b"import torch\nx = '\xff\xfe'\n",
     "cannot decode bad.py: byte 0xff at line 2, column 6 is not valid utf-8; save the file as UTF-8, or declare "
     "its encoding in a comment on line 1 or 2 (PEP 263: # -*- coding: latin-1 -*-)"),
    # An unknown codec is read as UTF-8 when it can be (test_cli_errors.py); these bytes cannot.
    (b"# -*- coding: klingon -*-\nimport torch\nx = '\xff'\n", "cannot decode bad.py: unknown encoding: klingon"),
    (b"\xef\xbb\xbf# coding: latin-1\nimport torch\n", "cannot decode bad.py: it starts with a UTF-8 byte-order mark, but its coding comment declares another "
     "encoding"),
])
def test_undecodable_bytes_are_exit_2_naming_the_file(tmp_path, data, message):
    (tmp_path / "bad.py").write_bytes(data)
    write(tmp_path, {"good.py": DATA_PARALLEL})
    for args in ([], ["--fix"], ["--format", "json"]):
        r = lint(*args, ".", cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert f"torchcheck: error: {message}" in r.stderr
        assert "TRN000" not in r.stdout and "Traceback" not in r.stderr
        assert "good.py" in r.stdout


def test_undecodable_or_too_deep_standard_input_is_exit_2(tmp_path):
    for data, message in ((b"import torch\nx = '\xff'\n", "cannot decode t.py: byte 0xff at line 2, column 6"),
                          (NESTED["binary operators"][0].encode(), "cannot lint t.py: ")):
        r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--stdin-filename", "t.py", "-"],
                           cwd=tmp_path, input=data, capture_output=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
        assert r.returncode == 2, r.stderr
        assert f"torchcheck: error: {message}".encode() in r.stderr and b"Traceback" not in r.stderr


def test_an_undecodable_notebook_is_exit_2_naming_it(tmp_path):
    (tmp_path / "nb.ipynb").write_bytes(b'{"cells": [{"cell_type": "code", "source": "import torch # \xe9"}]}')
    r = lint("nb.ipynb", cwd=tmp_path)
    assert r.returncode == 2 and "TRN000" not in r.stdout
    assert "torchcheck: error: cannot decode nb.ipynb: byte 0xe9 at line 1, column 60 is not valid utf-8; save the " \
           "file as UTF-8 (a notebook is JSON, always UTF-8)" in r.stderr


def test_a_coding_cookie_makes_the_same_bytes_fine(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\nx = '\xe9'\n")
    r = lint("latin.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


# ----------------------------------------------------- size and nesting
def test_a_50_mb_file_is_skipped_with_its_size_and_the_limit(tmp_path):
    with open(tmp_path / "huge.py", "wb") as f:
        f.write(b"import torch\nm = torch.nn.DataParallel(m)\n")
        f.truncate(50 * 2**20)  # sparse: the size is real, the disk is spared
    write(tmp_path, {"a.py": DATA_PARALLEL})
    start = time.monotonic()
    r = lint(".", cwd=tmp_path)
    assert time.monotonic() - start < 30
    assert r.returncode == 1, r.stderr
    assert "torchcheck: warning: skipping huge.py: 50.0 MiB, over the limit of 10 MiB for one file" in r.stderr
    assert "a.py:2:9" in r.stdout and "huge.py" not in r.stdout


NESTED = {
    # CPython's tokenizer refuses 200 nested brackets: a syntax error, reported as one.
    "brackets": ("import torch\nx = " + "(" * 10_000 + "1" + ")" * 10_000 + "\n", "TRN000"),
    "lists": ("import torch\nx = " + "[" * 10_000 + "]" * 10_000 + "\n", "TRN000"),
    # Valid nesting, too deep to parse safely: LibCST's native parser crashes the process (SIGSEGV)
    # on these, or takes minutes.
    "binary operators": ("import torch\nx = 1" + " + 1" * 10_000 + "\n", "too deep"),
    "elif chain": ("import torch\nif x == 0:\n    pass\n"
                   + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 10_000)), "too deep"),
    "call chain": ("import torch\nx = f" + "()" * 10_000 + "\n", "too deep"),
    "attribute chain": ("import torch\nx = a" + ".b" * 10_000 + "\n", "too deep"),
    "unary operators": ("import torch\nx = " + "-" * 10_000 + "1\n", "too deep"),
    "multi-line sum": ("import torch\nx = (1\n" + "    + 1\n" * 10_000 + ")\n", "too deep"),
    "backslash continuations": ("import torch\nx = 1" + " \\\n + 1" * 10_000 + "\n", "too deep"),
    "nested lambdas": ("import torch\nx = " + "lambda: " * 10_000 + "1\n", "too deep"),
    # 10,000 levels of one-space indentation are 50 MB; CPython refuses more than 100 levels anyway.
    "indentation": ("import torch\n" + "".join(" " * i + "if x:\n" for i in range(1_000)) + " " * 1_000
                    + "pass\n", "TRN000"),
}


@pytest.mark.parametrize("kind", NESTED)
def test_10000_deep_nesting_is_reported_never_a_crash(tmp_path, kind):
    source, expected = NESTED[kind]
    write(tmp_path, {"deep.py": source, "a.py": DATA_PARALLEL})
    r = lint(".", cwd=tmp_path, timeout=60)
    assert r.returncode != -signal.SIGSEGV, "the parser crashed the process"
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stdout
    assert "a.py:2:9: TRN301" in r.stdout  # the other file is still linted
    if expected == "TRN000":
        assert r.returncode == 1, r.stderr
        assert "deep.py:" in r.stdout and "TRN000 [error] SyntaxError: too many" in r.stdout
    else:
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "torchcheck: error: cannot lint deep.py: " in r.stderr
        assert "the file was not checked" in r.stderr


def test_deep_but_reasonable_nesting_is_linted(tmp_path):
    """Near misses: what real code holds (a 150-way elif, a 150-term sum, 90 nested brackets, a long
    literal table) is linted as usual."""
    source = ("import torch\nif x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(150))
              + "y = 1" + " + 1" * 150 + "\n"
              + "z = " + "(" * 90 + "1" + ")" * 90 + "\n"
              + "table = [\n" + "".join(f"    {i},\n" for i in range(20_000)) + "]\n"
              + DATA_PARALLEL)
    write(tmp_path, {"t.py": source})
    r = lint("t.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("t.py:") and "TRN301" in r.stdout and r.stderr == ""


def test_syntax_newer_than_the_interpreter_is_a_syntax_error_whatever_the_depth_check_says(tmp_path):
    """A long line makes the depth check ask CPython, which leaves syntax it does not know (a PEP 695 type
    alias before 3.12) to LibCST, which reads it; the Python running torchcheck rejects the file all the
    same, so it is TRN000 there (linted on 3.12 and later, which accept it)."""
    source = "import torch\ntype X = int\nx = [" + "1, " * 1000 + "]\n" + DATA_PARALLEL.replace("import torch\n", "")
    write(tmp_path, {"t.py": source})
    r = lint("--format", "json", "t.py", cwd=tmp_path)
    codes = [(f["code"], f["line"]) for f in json.loads(r.stdout)]
    assert codes == ([("TRN000", 2)] if sys.version_info < (3, 12) else [("TRN301", 4)]), r.stdout


def test_valid_python_libcst_cannot_read_is_not_called_a_syntax_error(tmp_path):
    """CPython accepts a parenthesised annotated target (``(x): int = 1``); LibCST 1.x does not. That
    is torchcheck's limit, not the user's mistake: no TRN000, a note on stderr naming the file, the
    other files linted, exit 2 (as Ruff exits when it cannot lint a file). A real syntax error in a
    third file is still TRN000."""
    write(tmp_path, {"odd.py": "import torch\n(x): int = 1\n" + DATA_PARALLEL,
                     "bad.py": "import torch\nx = = 1\n", "a.py": DATA_PARALLEL})
    r = lint(".", cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "a.py:2:9: TRN301" in r.stdout
    assert "bad.py:2:5: TRN000 [error] SyntaxError: invalid syntax" in r.stdout
    assert "odd.py" not in r.stdout, r.stdout
    assert "torchcheck: error: cannot lint odd.py: it is valid Python, but torchcheck's parser (LibCST) " \
           "cannot read it (error at 2:5); the file was not checked" in r.stderr
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------- atomic fixes
_SLOW_DISK = """
import os, sys, time
from lint_rules import fixes
real_fsync = os.fsync
def fsync(fd):  # a slow disk: the write phase lasts long enough to be killed in the middle
    time.sleep(0.05)
    real_fsync(fd)
fixes.os.fsync = fsync
from lint_rules.cli import main
sys.exit(main(["lint", "--no-cache", "--fix", "-j", "1", "."]))
"""


def test_a_run_killed_while_writing_fixes_leaves_every_file_old_or_new(tmp_path):
    """SIGKILL in the middle of writing fixes to many files: no file is ever truncated or half
    written (each is a temporary file renamed over the original)."""
    n = 40
    body = MIXED + "".join(f"x{i} = {i}\n" for i in range(100))
    fixed_body = SAFE_FIXED + "".join(f"x{i} = {i}\n" for i in range(100))
    write(tmp_path, {f"m{i:02d}.py": body for i in range(n)})
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_DISK], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while (tmp_path / "m00.py").read_text() == body and time.monotonic() < deadline:
        time.sleep(0.01)  # the first file is written: the write phase has begun
    time.sleep(0.6)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    texts = [(tmp_path / f"m{i:02d}.py").read_text() for i in range(n)]
    assert all(t in (body, fixed_body) for t in texts)
    assert 0 < texts.count(fixed_body) < n  # killed half-way, not before or after the writes
    # The leftover temporary files are not Python files: the next run neither lints nor trips on them.
    r = run("lint", "--no-cache", "--fix", ".", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert all((tmp_path / f"m{i:02d}.py").read_text() == fixed_body for i in range(n))
