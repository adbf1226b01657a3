"""Walking a directory skips what git ignores, as Ruff does; ``--no-respect-gitignore`` turns it off."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.lint.test_cli import DATA_PARALLEL, run, write


def _git_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    write(root, {
        ".gitignore": "generated/\n*_pb2.py\n!keep_pb2.py\n",
        "sub/.gitignore": "local.py\n",
        "a.py": DATA_PARALLEL,
        "generated/g.py": DATA_PARALLEL,
        "x_pb2.py": DATA_PARALLEL,
        "keep_pb2.py": DATA_PARALLEL,
        "sub/s.py": DATA_PARALLEL,
        "sub/local.py": DATA_PARALLEL,
        "excluded_by_info.py": DATA_PARALLEL,
    })
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("excluded_by_info.py\n")


def _paths(r) -> set[str]:
    return {f["path"] for f in json.loads(r.stdout)}


def test_gitignored_files_and_directories_are_not_linted(tmp_path):
    _git_repo(tmp_path)
    r = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    # nested .gitignore, .git/info/exclude and negation all count, as git counts them
    assert _paths(r) == {"a.py", "keep_pb2.py", "sub/s.py"}
    # from a subdirectory, and with the subdirectory as the path
    assert _paths(run("lint", "--format", "json", ".", cwd=tmp_path / "sub")) == {"s.py"}
    assert _paths(run("lint", "--format", "json", "sub", cwd=tmp_path)) == {"sub/s.py"}


def test_no_respect_gitignore_lints_everything(tmp_path):
    _git_repo(tmp_path)
    r = run("lint", "--format", "json", "--no-respect-gitignore", ".", cwd=tmp_path)
    assert _paths(r) == {"a.py", "keep_pb2.py", "sub/s.py", "generated/g.py", "x_pb2.py", "sub/local.py",
                         "excluded_by_info.py"}


def test_an_ignored_file_named_explicitly_is_linted(tmp_path):
    _git_repo(tmp_path)
    assert _paths(run("lint", "--format", "json", "x_pb2.py", "generated/g.py", cwd=tmp_path)) == {
        "x_pb2.py", "generated/g.py"}


def test_a_tracked_file_is_never_ignored(tmp_path):
    """As in git: a .gitignore pattern does not hide a file that is already tracked."""
    _git_repo(tmp_path)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "x_pb2.py"], check=True, timeout=60)
    assert "x_pb2.py" in _paths(run("lint", "--format", "json", ".", cwd=tmp_path))


def test_outside_a_git_work_tree_a_gitignore_file_changes_nothing(tmp_path):
    write(tmp_path, {".gitignore": "a.py\n", "a.py": DATA_PARALLEL})
    r = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert _paths(r) == {"a.py"} and r.stderr == ""


def test_show_files_applies_gitignore(tmp_path):
    _git_repo(tmp_path)
    r = run("lint", "--show-files", ".", cwd=tmp_path)
    assert r.stdout.splitlines() == ["a.py", "keep_pb2.py", "sub/s.py"]


def _git_that_cannot_list(tmp_path: Path) -> dict:
    """A `git` first on PATH that fails to list ignored files the way some git versions do inside
    an ignored directory, and passes everything else to the real git."""
    import os
    import shutil
    import stat

    real = shutil.which("git")
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\n"
                    'case " $* " in *" ls-files "*) '
                    'echo "fatal: git ls-files: internal error - directory entry not superset of prefix" >&2; '
                    "exit 128;; esac\n"
                    f'exec "{real}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"}


def test_an_ignored_directory_git_cannot_list_is_linted_without_a_warning(tmp_path):
    _git_repo(tmp_path)
    env = _git_that_cannot_list(tmp_path)
    r = run("lint", "--format", "json", "generated", cwd=tmp_path, env=env)
    assert _paths(r) == {"generated/g.py"}
    assert "gitignore is not applied" not in r.stderr  # the directory is ignored as a whole: nothing to say
    # A directory git does not ignore, that git fails to list: the user is told .gitignore was not applied.
    r = run("lint", "--format", "json", "sub", cwd=tmp_path, env=env)
    assert "sub/local.py" in _paths(r)
    assert ".gitignore is not applied under" in r.stderr and "internal error" in r.stderr
