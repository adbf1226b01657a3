"""Install advice works as written: what torchcheck prints (lint_rules/install.py) and what the docs say."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from lint_rules import install

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
DISTRIBUTION = PYPROJECT["project"]["name"]

# Where install advice is written by hand (docs/rules/ is generated from the rules and has none).
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md",
        *sorted(p for p in (REPO / "docs").rglob("*.md") if "rules" not in p.relative_to(REPO / "docs").parts)]

# The only form that installs torchcheck without a checkout; docs/install.md explains both placeholders.
GIT_FORM = re.compile(rf"{DISTRIBUTION}(\[(?P<extras>[a-z,]+)\])? @ git\+<repository URL>@<commit SHA>")
CHECKOUT_FORM = re.compile(r"(\.|/path/to/torchcheck)(\[(?P<extras>[a-z,]+)\])?")


def _without_pygls(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    blocker = tmp_path / "pygls"
    blocker.mkdir()
    (blocker / "__init__.py").write_text('raise ImportError("No module named \'pygls\'", name="pygls")\n')
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    return subprocess.run([sys.executable, "-m", "lint_rules", "server"], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_the_server_requirements_are_the_server_extra() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert list(install.SERVER_REQUIREMENTS) == extras["server"]
    assert list(install.PLUGIN_REQUIREMENTS) == extras["plugin"]
    assert list(install.STRATEGIES_REQUIREMENTS) == extras["strategies"]
    for extra in ("plugin", "strategies", "server"):
        assert "pytest-torchcheck[" not in install.extra_hint(extra)  # on no index: never printed


def test_without_pygls_the_server_prints_an_install_command_that_works(tmp_path: Path) -> None:
    done = _without_pygls(tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{DISTRIBUTION}[" not in done.stderr  # the distribution is on no index
    command = re.search(r"install it with: (.+?) \(what the `server` extra adds", done.stderr).group(1)
    argv = shlex.split(command)
    assert argv[:4] == [sys.executable, "-m", "pip", "install"]  # into the interpreter running torchcheck
    # pygls is installed here, so pip resolves it without downloading anything.
    check = subprocess.run([*argv, "--dry-run", "--no-deps"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    assert 'python -m pip install ".[server]"' in done.stderr


def test_help_gives_the_same_install_command() -> None:
    done = subprocess.run([sys.executable, "-m", "lint_rules", "--help"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "500"})
    assert done.returncode == 0
    assert install.server_hint() in " ".join(done.stdout.split())


def _install_lines() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for line in path.read_text().splitlines():
            if "pip install" in line:
                found.append((path.relative_to(REPO).as_posix(), line))
    return found


def test_every_documented_install_of_torchcheck_has_a_form_that_works() -> None:
    """No `pip install pytest-torchcheck` from an index that does not carry it, no extra that does not
    exist, and the git form only with the placeholders docs/install.md explains."""
    lines = _install_lines()
    assert any("[server]" in line for _, line in lines)  # the lines checked include the language server's
    for where, line in lines:
        for command in re.findall(r"pip install ([^`#]+)", line):
            for word in re.findall(r'"([^"]+)"|\'([^\']+)\'|(\S+)', command):
                arg = next(w for w in word if w)
                if arg.startswith("-") or not (DISTRIBUTION in arg or arg.startswith((".", "/path/to/torchcheck"))):
                    continue  # an option, torch, pygls, a package of the user's
                form = GIT_FORM.fullmatch(arg) or CHECKOUT_FORM.fullmatch(arg)
                assert form, f"{where}: {line.strip()!r} installs {arg!r}, which is on no index"
                unknown = set((form.group("extras") or "").split(",")) - {""} - EXTRAS
                assert not unknown, f"{where}: {arg!r} names extras {unknown} that pyproject.toml lacks"
    explained = (REPO / "docs" / "install.md").read_text()
    assert "`<repository URL>` is" in explained and "`<commit SHA>` is" in explained
