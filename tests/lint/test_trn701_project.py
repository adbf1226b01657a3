"""TRN701's verdict on a bare ``torch.load(path)`` depends on the torch the project supports.

Run as the CLI is run: in a directory whose ``pyproject.toml`` declares (or does not
declare) a lower bound on torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent(
    """\
    import torch
    state = torch.load("checkpoint.pt")
    explicit = torch.load("checkpoint.pt", weights_only=False)
    """
)


def lint(project: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--select", "TRN701", "--format", "json",
                        "--exit-zero", "train.py"],
                       cwd=project, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def write_project(root: Path, dependencies: list[str] | None) -> None:
    (root / "train.py").write_text(SOURCE)
    if dependencies is not None:
        deps = ", ".join(json.dumps(d) for d in dependencies)
        (root / "pyproject.toml").write_text(f'[project]\nname = "p"\nversion = "0"\ndependencies = [{deps}]\n')


@pytest.mark.parametrize(("dependencies", "bare_load"), [
    (["torch>=2.6"], None),  # weights_only=True is the default: quiet
    (["torch>=2.7,<3", "numpy"], None),
    (["torch>=2.0"], "error"),  # torch 2.0-2.5 unpickle by default
    (["torch==1.13.1"], "error"),
    (["torch>=1.8"], "warning"),  # weights_only= raises TypeError before 1.13: raise the floor, no fix
    (["numpy"], "warning"),  # no torch bound: cannot tell
    (None, "warning"),  # no pyproject.toml at all
])
def test_bare_torch_load_follows_the_declared_torch(tmp_path: Path, dependencies, bare_load) -> None:
    write_project(tmp_path, dependencies)
    findings = lint(tmp_path)
    by_line = {f["line"]: f for f in findings}
    # weights_only=False is an error whatever torch the project supports.
    assert by_line[3]["severity"] == "error"
    if bare_load is None:
        assert 2 not in by_line, by_line
    else:
        assert by_line[2]["code"] == "TRN701"
        assert by_line[2]["severity"] == bare_load


@pytest.mark.parametrize(("name", "text", "bare_load"), [
    ("setup.py", "from setuptools import setup\nsetup(name='p', install_requires=['torch>=2.0'])\n", "error"),
    ("setup.py", "from setuptools import setup\nsetup(name='p', install_requires=['torch>=2.6'])\n", None),
    ("setup.py", "from setuptools import setup\nsetup(name='p', install_requires=['torch>=1.8'])\n", "warning"),
    ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    torch>=2.6\n", None),
    ("setup.cfg", "[options]\ninstall_requires =\n    torch>=2.1\n", "error"),
    ("environment.yml", "dependencies:\n  - python=3.9\n  - pytorch=1.10\n", "warning"),
])
def test_bare_torch_load_follows_the_bound_in_other_project_files(tmp_path: Path, name, text, bare_load) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / name).write_text(text)
    by_line = {f["line"]: f for f in lint(tmp_path)}
    if bare_load is None:
        assert 2 not in by_line, by_line
    else:
        assert by_line[2]["severity"] == bare_load, by_line
        below = "torch>=1.8" in text or "pytorch=1.10" in text  # older than weights_only= (torch 1.13)
        assert ("1.13, newer than" in by_line[2]["message"]) is below, by_line[2]
        if below:  # raise the floor: no fix, and the file that declares it is named
            assert by_line[2]["fix"] is None and f"({name})" in by_line[2]["message"]


def _plain_lint(project: Path, rel: str, *args: str) -> list[tuple[int, str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--format", "json", "--exit-zero",
                        *args, rel], cwd=project, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return [(f["line"], f["confidence"]) for f in json.loads(r.stdout) if f["code"] == "TRN701"]


LOADS = textwrap.dedent(
    """\
    import torch
    own = torch.load(os.path.join(out_dir, "last.pt"))
    theirs = torch.load(args.pretrained)
    """
)


def test_a_library_module_or_a_pretrained_checkpoint_is_certain_and_a_script_reload_possible(tmp_path: Path):
    write_project(tmp_path, ["torch>=2.0"])
    (tmp_path / "train.py").write_text(LOADS)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "io.py").write_text(LOADS)
    # a script: its pretrained checkpoint is certain, its own checkpoint possible (--preview only)
    assert _plain_lint(tmp_path, "train.py") == [(3, "certain")]
    assert _plain_lint(tmp_path, "train.py", "--preview") == [(2, "possible"), (3, "certain")]
    # a library module reads what its users hand it: both loads are certain
    assert _plain_lint(tmp_path, "pkg/io.py") == [(2, "certain"), (3, "certain")]
