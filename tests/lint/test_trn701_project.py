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


def test_a_pretrained_checkpoint_is_certain_and_a_reload_of_the_projects_own_possible(tmp_path: Path):
    write_project(tmp_path, ["torch>=2.0"])
    (tmp_path / "train.py").write_text(LOADS)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "io.py").write_text(LOADS)
    # a script: its pretrained checkpoint is certain, its own checkpoint possible (--preview only)
    assert _plain_lint(tmp_path, "train.py") == [(3, "certain")]
    assert _plain_lint(tmp_path, "train.py", "--preview") == [(2, "possible"), (3, "certain")]
    # a library module too: its resume state, caches and save/load pairs read what its user's run wrote
    assert _plain_lint(tmp_path, "pkg/io.py") == [(3, "certain")]
    assert _plain_lint(tmp_path, "pkg/io.py", "--preview") == [(2, "possible"), (3, "certain")]


WEIGHTS = textwrap.dedent(
    """\
    import os
    import torch
    from urllib.request import urlretrieve
    from safetensors import safe_open

    class Block:
        @classmethod
        def restore(cls, folder):
            if os.path.exists(os.path.join(folder, "model.safetensors")):
                with safe_open(os.path.join(folder, "model.safetensors"), framework="pt") as f:
                    return {k: f.get_tensor(k) for k in f.keys()}
            return torch.load(os.path.join(folder, "pytorch_model.bin"), map_location="cpu")

    def features(folder, loader):
        for i, batch in enumerate(loader):
            torch.save(batch, os.path.join(folder, f"part{i}.pt"))
        return torch.load(os.path.join(folder, "part0.pt"))

    def fetch(url, cache):
        target = os.path.join(cache, os.path.basename(url))
        urlretrieve(url, target)
        return torch.load(target)

    def detector(pretrained_weights):
        net = torch.load(pretrained_weights)["model"].float().eval()
        return net
    """
)


def test_certain_loads_read_published_weights_and_a_pickled_module_is_left_possible(tmp_path: Path) -> None:
    write_project(tmp_path, ["torch>=2.0"])
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "weights.py").write_text(WEIGHTS)
    # the pickle fallback beside a safetensors read and a downloaded file are certain; a feature cache
    # the function itself wrote is not, nor a pretrained file that holds a whole pickled module
    # (weights_only=True cannot load it)
    assert _plain_lint(tmp_path, "pkg/weights.py") == [(12, "certain"), (22, "certain")]
    assert _plain_lint(tmp_path, "pkg/weights.py", "--preview") == [
        (12, "certain"), (17, "possible"), (22, "certain"), (25, "possible")]
