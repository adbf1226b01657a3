"""Facts about the project a file belongs to, read from its ``pyproject.toml``.

Only what rules need: the oldest torch version the project declares support for.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_TORCH_REQ = re.compile(r"^\s*torch\s*(\[[^\]]*\])?\s*(?P<spec>[^;]*)", re.I)
_LOWER = re.compile(r"(>=|==|~=|>)\s*(\d+)\.(\d+)")


@dataclass(frozen=True)
class ProjectInfo:
    # Oldest torch (major, minor) the project supports; None when it does not say.
    torch_min_version: tuple[int, int] | None = None
    source: str | None = None  # the pyproject.toml it was read from


def read_project(start: Path) -> ProjectInfo:
    """From the nearest ``pyproject.toml`` at or above ``start``; empty when none says."""
    start = start.resolve()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                return ProjectInfo()
            deps = data.get("project", {}).get("dependencies", []) if isinstance(data.get("project"), dict) else []
            return ProjectInfo(torch_min_version(deps if isinstance(deps, list) else []), str(candidate))
    return ProjectInfo()


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
