"""The pre-commit configurations docs/linter/integrations.md documents run for real.

`pre-commit run --all-files` builds the hook's environment from a local clone of this repository, as
a user's would from its git URL. It needs no network beyond PyPI: pip fetches LibCST and setuptools
there (or from its cache); the repository itself comes from the clone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import processes

REPO = Path(__file__).resolve().parents[1]
INTEGRATIONS = REPO / "docs" / "linter" / "integrations.md"
# What installing torchcheck reads: the clone holds the working tree's copy of these, so the hook
# runs the code under test, not the last commit.
PACKAGING = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "lint_rules", "pytest_torchcheck"]
# A cold pip cache downloads LibCST and setuptools and builds a wheel; a warm one takes seconds.
TIMEOUT = 480
# ... and each test runs pre-commit once, past the suite's usual limit (pyproject.toml).
pytestmark = pytest.mark.timeout(TIMEOUT + 60)

TRAIN = """import torch

def train(model, loader, optimizer, loss_fn):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
"""  # TRN101 on line 7
CLEAN = "import torch\nmodel = torch.nn.Linear(2, 2)\n"


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", "-c", "user.name=torchcheck-test", "-c", "user.email=test@torchcheck.invalid",
                           "-c", "commit.gpgsign=false", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository holding the working tree's torchcheck, and its commit SHA."""
    root = tmp_path_factory.mktemp("torchcheck")
    listed = _git("ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *PACKAGING, cwd=REPO)
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is gone from the copy too
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / name)
    _git("init", "-q", cwd=root)
    _git("add", "-A", cwd=root)
    _git("commit", "-q", "-m", "torchcheck under test", cwd=root)
    return root, _git("rev-parse", "HEAD", cwd=root)


def _documented_configs() -> dict[str, str]:
    blocks = re.findall(r"```yaml\n(.*?)```", INTEGRATIONS.read_text(), re.S)
    configs = {("local" if "repo: local" in b else "remote"): b for b in blocks if "id: torchcheck" in b}
    assert set(configs) == {"remote", "local"}, "integrations.md documents a remote and a local hook"
    return configs


def _run_pre_commit(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    assert "<" not in config, f"a placeholder is left in the configuration:\n{config}"
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    (project / "clean.py").write_text(CLEAN)
    (project / ".pre-commit-config.yaml").write_text(config)
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)  # pre-commit refuses an unstaged configuration
    # No PYTHONPATH: the hook must run the torchcheck pre-commit installed, not this checkout's.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1")
    return processes.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
                         cwd=project, env=env, timeout=TIMEOUT)


def _assert_the_hook_reported(done: subprocess.CompletedProcess[str]) -> None:
    out = done.stdout + done.stderr
    assert done.returncode == 1, out  # findings fail the hook; an install or config error exits 3 or 1 without them
    assert re.search(r"^train\.py:7:9: TRN101 ", done.stdout, re.M), out
    assert "clean.py:" not in done.stdout
    assert "Found 1 finding in 1 file (2 files checked)." in done.stdout, out


def test_the_documented_remote_hook_runs_from_a_clone_at_a_commit(tmp_path: Path, clone: tuple[Path, str]) -> None:
    root, sha = clone
    config = _documented_configs()["remote"].replace("<repository URL>", str(root)).replace("<commit SHA>", sha)
    _assert_the_hook_reported(_run_pre_commit(tmp_path, config))


def test_the_documented_local_hook_installs_torchcheck_from_git(tmp_path: Path, clone: tuple[Path, str]) -> None:
    """A `repo: local` hook with `language: python` builds its own environment: no venv is active here."""
    root, sha = clone
    config = _documented_configs()["local"]
    assert "language: python" in config and "additional_dependencies:" in config
    config = config.replace("<repository URL>", root.as_uri()).replace("<commit SHA>", sha)
    _assert_the_hook_reported(_run_pre_commit(tmp_path, config))


def test_the_documented_local_hook_installs_torchcheck_from_a_checkout(tmp_path: Path,
                                                                       clone: tuple[Path, str]) -> None:
    root, _ = clone
    placeholder = "file:///absolute/path/to/torchcheck"
    documented = re.search(rf'`(additional_dependencies: \["pytest-torchcheck @ {placeholder}"\])`',
                           INTEGRATIONS.read_text()).group(1)
    config = re.sub(r"additional_dependencies: .*", documented.replace(placeholder, root.as_uri()),
                    _documented_configs()["local"])
    _assert_the_hook_reported(_run_pre_commit(tmp_path, config))
