"""Facts about the project a file belongs to, read from its packaging and requirements files.

Only what rules need: the oldest torch version the project declares support for. It is read
from ``pyproject.toml`` (PEP 621 ``[project] dependencies`` or Poetry's
``[tool.poetry.dependencies]``), ``setup.cfg`` (``[options] install_requires``), ``setup.py``
(a literal ``install_requires=[...]``, read without running it), ``requirements*.txt`` (also
under ``requirements/``, following ``-r`` includes) and a conda ``environment.yml``.
"""

from __future__ import annotations

import ast
import configparser
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


# `torch`, and conda's name for it, `pytorch`; an extra (`torch[opt]`) and a conda channel
# (`pytorch::pytorch`) are allowed before the specifier.
_TORCH_REQ = re.compile(r"^\s*(?:[\w.-]+::)?(?:py)?torch\s*(\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.I)
_TORCH_NAME = re.compile(r"^\s*(?:[\w.-]+::)?(?:py)?torch\b(?![-_.\w])", re.I)
# A lower bound: pip's `>=`, `==`, `~=`, `>`, Poetry's `^` and `~`, and conda's single `=`
# (`pytorch=1.8`) or a bare version (`pytorch 1.8.*`).
_LOWER = re.compile(r"(>=|==|~=|>|\^|~|=|^|\s)\s*(\d+)\.(\d+)")
_INCLUDE = re.compile(r"^\s*(?:-r|--requirement)\s*=?\s*(\S+)")
_MAX_INCLUDES = 20  # a requirements file that includes itself (or a long chain) stops here


@record(frozen=True)
class ProjectInfo:
    # Oldest torch (major, minor) the project supports; None when it does not say.
    torch_min_version: tuple[int, int] | None = None
    source: str | None = None  # the file it was read from


def read_project(start: Path) -> ProjectInfo:
    """The torch lower bound from the nearest project files at or above ``start``.

    In each directory, ``pyproject.toml``, ``setup.cfg``, ``setup.py``, the requirements
    files and ``environment.yml`` are read in that order; the search stops at the first
    directory that states a torch lower bound, or at a project root (a ``pyproject.toml``,
    ``setup.py``, ``setup.cfg`` or ``.git``). Empty when nothing says.
    """
    return _read_dir(str(start.resolve()))


def clear_cache() -> None:
    """Forget what was read (results are memoised per directory for the life of the process)."""
    _read_dir.cache_clear()


_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


@lru_cache(maxsize=None)
def _read_dir(directory: str) -> ProjectInfo:
    d = Path(directory)
    for path, reader in ((d / "pyproject.toml", _pyproject_requirements),
                         (d / "setup.cfg", _setup_cfg_requirements),
                         (d / "setup.py", _setup_py_requirements)):
        if path.is_file():
            found = torch_min_version(reader(_read_text(path)))
            if found is not None:
                return ProjectInfo(found, str(path))
    requirement_files = sorted(d.glob("requirements*.txt")) + sorted(d.glob("requirements/*.txt"))
    for req_file in requirement_files:
        found = torch_min_version(_requirements_lines(req_file))
        if found is not None:
            return ProjectInfo(found, str(req_file))
    for name in ("environment.yml", "environment.yaml"):
        env = d / name
        if env.is_file():
            found = torch_min_version(_conda_requirements(_read_text(env)))
            if found is not None:
                return ProjectInfo(found, str(env))
    markers = [d / m for m in _ROOT_MARKERS if (d / m).is_file()]
    if markers or (d / ".git").exists():
        return ProjectInfo(None, str(markers[0]) if markers else None)
    parent = d.parent
    return ProjectInfo() if parent == d else _read_dir(str(parent))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _pyproject_requirements(text: str) -> list[str]:
    tomllib = _toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    project = data.get("project")
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    out = [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
    tool = data.get("tool")
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    poetry_deps = poetry.get("dependencies") if isinstance(poetry, dict) else None
    if isinstance(poetry_deps, dict):
        for name, spec in poetry_deps.items():
            if isinstance(spec, dict):
                spec = spec.get("version")
            if isinstance(name, str) and isinstance(spec, str):
                out.append(f"{name} {spec}")
    return out


def _setup_cfg_requirements(text: str) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    value = parser.get("options", "install_requires", fallback="")
    return [line.strip() for line in value.splitlines() if line.strip()]


def _setup_py_requirements(text: str) -> list[str]:
    """String literals of ``install_requires=`` in ``setup.py``, read from its syntax tree.

    The argument may be a list literal or a name assigned one at module level; anything
    computed (a file read, a function call) says nothing here.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lists: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    lists[target.id] = stmt.value
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg != "install_requires":
                continue
            value = lists.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
            if isinstance(value, (ast.List, ast.Tuple)):
                out.extend(e.value for e in value.elts
                           if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return out


def _requirements_lines(path: Path, seen: set[Path] | None = None) -> list[str]:
    """The requirement lines of a requirements file, with the files it includes (``-r``)."""
    seen = set() if seen is None else seen
    resolved = path.resolve()
    if resolved in seen or len(seen) >= _MAX_INCLUDES:
        return []
    seen.add(resolved)
    out: list[str] = []
    for line in _read_text(path).splitlines():
        line = line.split(" #", 1)[0].split("\t#", 1)[0]
        if line.lstrip().startswith("#"):
            continue
        include = _INCLUDE.match(line)
        if include:
            out.extend(_requirements_lines(path.parent / include.group(1), seen))
        else:
            out.append(line)
    return out


def _conda_requirements(text: str) -> list[str]:
    """The list items of a conda environment file (``- pytorch=1.8``), pip's included."""
    return [m.group(1) for m in re.finditer(r"^\s*-\s+([^\s#][^#\n]*)", text, re.M)]


def torch_min_version(requirements: list[str]) -> tuple[int, int] | None:
    """``["torch>=2.6,<3"]`` -> (2, 6); no torch requirement or no lower bound -> None."""
    for req in requirements:
        if not isinstance(req, str):
            continue
        m = _TORCH_REQ.match(req)
        if not m or not _TORCH_NAME.match(req):
            continue
        spec = re.sub(r"(<=|<|!=)\s*[\d.*]+", "", m.group("spec"))  # upper bounds and exclusions
        bounds = [(int(a), int(b)) for _, a, b in _LOWER.findall(spec)]
        if bounds:
            return max(bounds)
    return None
