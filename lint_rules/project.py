"""Facts about the project a file belongs to, read from its ``pyproject.toml``.

Only what rules need: the oldest torch version the project declares support for.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from pathlib import Path

from lint_rules.records import record


def _toml():
    """tomllib (tomli before Python 3.11), imported when a pyproject.toml is actually read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    return tomllib


_TORCH_REQ = re.compile(r"^\s*torch\s*(\[[^\]]*\])?\s*(?P<spec>[^;]*)", re.I)
_LOWER = re.compile(r"(>=|==|~=|>)\s*(\d+)\.(\d+)")


@record(frozen=True)
class ProjectInfo:
    # Oldest torch (major, minor) the project supports; None when it does not say.
    torch_min_version: tuple[int, int] | None = None
    source: str | None = None  # the pyproject.toml it was read from


def read_project(start: Path) -> ProjectInfo:
    """The torch lower bound from the nearest project files at or above ``start``.

    In each directory, ``pyproject.toml`` (``[project] dependencies``) and then
    ``requirements*.txt`` are read; the search stops at the first directory that
    states a torch lower bound, or at a project root (a ``pyproject.toml`` or a
    ``.git``). Empty when nothing says.
    """
    return _read_dir(str(start.resolve()))


def clear_cache() -> None:
    """Forget what was read (results are memoised per directory for the life of the process)."""
    _read_dir.cache_clear()


@lru_cache(maxsize=None)
def _read_dir(directory: str) -> ProjectInfo:
    d = Path(directory)
    pyproject = d / "pyproject.toml"
    if pyproject.is_file():
        tomllib = _toml()
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {}
        project = data.get("project") if isinstance(data.get("project"), dict) else {}
        deps = project.get("dependencies", [])
        found = torch_min_version(deps if isinstance(deps, list) else [])
        if found is not None:
            return ProjectInfo(found, str(pyproject))
    for req_file in sorted(d.glob("requirements*.txt")):
        try:
            lines = req_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        found = torch_min_version([ln.split("#", 1)[0] for ln in lines])
        if found is not None:
            return ProjectInfo(found, str(req_file))
    if pyproject.is_file() or (d / ".git").exists():
        return ProjectInfo(None, str(pyproject) if pyproject.is_file() else None)
    parent = d.parent
    return ProjectInfo() if parent == d else _read_dir(str(parent))


def torch_min_version(requirements: list[str]) -> tuple[int, int] | None:
    """``["torch>=2.6,<3"]`` -> (2, 6); no torch requirement or no lower bound -> None."""
    for req in requirements:
        if not isinstance(req, str):
            continue
        m = _TORCH_REQ.match(req)
        if not m or not re.match(r"^\s*torch\b(?![-_.\w])", req, re.I):
            continue
        bounds = [(int(a), int(b)) for _, a, b in _LOWER.findall(m.group("spec"))]
        if bounds:
            return max(bounds)
    return None
