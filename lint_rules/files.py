"""Which files to lint: expand paths, recurse into directories, apply excludes."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from lint_rules.errors import UsageError

# Directories never descended into (the set Ruff skips by default).
DEFAULT_EXCLUDES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "build",
    "dist", "node_modules", "site-packages", "venv", ".torchcheck_cache", "__pycache__",
})


def matches(path: Path, patterns: list[str], root: Path) -> bool:
    """Whether ``path`` (or one of its parent directories) matches a glob in ``patterns``.

    Patterns are relative to ``root`` (the configuration's directory); a pattern
    without a slash also matches any single path component, as in ``.gitignore``.
    """
    if not patterns:
        return False
    import fnmatch  # only runs with configured patterns
    try:
        rel = PurePosixPath(path.resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        rel = PurePosixPath(path.as_posix())
    parts = rel.parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pat in patterns:
        pat = pat.rstrip("/")
        if pat.startswith("./"):
            pat = pat[2:]
        if "/" not in pat:
            if any(fnmatch.fnmatchcase(part, pat) for part in parts):
                return True
        elif any(fnmatch.fnmatchcase(prefix, pat) for prefix in prefixes):
            return True
    return False


def discover(paths: list[str], excludes: list[str], root: Path) -> list[Path]:
    """Python files under ``paths``, sorted, each once.

    Files named explicitly are linted even if they are not ``*.py`` (as pre-commit
    passes them), unless a configured exclude matches them.
    """
    out: dict[str, Path] = {}
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise UsageError(f"path {raw!r} does not exist")
        if p.is_file():
            if not matches(p, excludes, root):
                out[str(p)] = p
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            d = Path(dirpath)
            keep = []
            for name in sorted(dirnames):
                sub = d / name
                if name in DEFAULT_EXCLUDES or (sub / "pyvenv.cfg").exists() or name.endswith(".egg-info"):
                    continue
                if matches(sub, excludes, root):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if name.endswith((".py", ".ipynb")):
                    f = d / name
                    if not matches(f, excludes, root):
                        out[str(f)] = f
    return [out[k] for k in sorted(out)]


def display(path: Path) -> str:
    """Path as shown in output: relative to the working directory when below it."""
    real = os.path.realpath(path)  # as Path.resolve(), at a fraction of the cost per file
    cwd = _real_cwd()
    if real == cwd:
        return "."
    if real.startswith(cwd.rstrip(os.sep) + os.sep):
        return Path(real[len(cwd.rstrip(os.sep)) + 1:]).as_posix()
    return path.as_posix()


def _real_cwd() -> str:
    cwd = os.getcwd()
    cached = _CWD.get(cwd)
    if cached is None:
        cached = _CWD[cwd] = os.path.realpath(cwd)
    return cached


_CWD: dict[str, str] = {}
