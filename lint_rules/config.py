"""``[tool.torchcheck]`` in the nearest ``pyproject.toml``.

Every error names the key, the bad value, the file, and what is allowed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lint_rules import registry
from lint_rules.errors import ConfigError, UsageError, did_you_mean
from lint_rules.records import factory, record


def _toml():
    """tomllib (tomli before Python 3.11), imported when a pyproject.toml is actually read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    return tomllib


LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude", "fixable", "unfixable")
BOOL_KEYS = ("unsafe-fixes", "preview", "respect-gitignore")
ALLOWED_KEYS = (*LIST_KEYS, "per-file-ignores", "fail-on", *BOOL_KEYS, "baseline")
SEVERITIES = ("warning", "error")
CODE_KEYS = ("select", "extend-select", "ignore", "fixable", "unfixable")


@record
class Config:
    path: Path | None = None  # the pyproject.toml it came from
    root: Path = factory(Path.cwd)  # patterns are relative to this
    select: list[str] | None = None
    extend_select: list[str] = factory(list)
    ignore: list[str] = factory(list)
    exclude: list[str] = factory(list)
    per_file_ignores: dict[str, list[str]] = factory(dict)
    fail_on: str | None = None
    unsafe_fixes: bool = False  # as Ruff's setting: unsafe fixes count as available and --fix applies them
    preview: bool = False  # as Ruff's: the preview rules run too (ALL and prefixes select them)
    fixable: list[str] | None = None  # codes whose fixes may be offered and applied (None: all)
    unfixable: list[str] = factory(list)  # codes whose fixes are never offered
    respect_gitignore: bool = True  # as Ruff's: walking a directory skips what git ignores
    baseline: Path | None = None  # findings recorded there are not reported (relative to the config's folder)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.torchcheck] table."""
    start = start.resolve()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except OSError:
                continue
            if "torchcheck" in text and _has_table(candidate, text):
                return candidate
    return None


def _has_table(path: Path, text: str) -> bool:
    tomllib = _toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    return isinstance(data.get("tool"), dict) and "torchcheck" in data["tool"]


def load(path: Path) -> Config:
    """Read and validate [tool.torchcheck] from ``path``."""
    tomllib = _toml()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read configuration file {path}: {e.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    table = data.get("tool", {}).get("torchcheck", {}) if isinstance(data.get("tool"), dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchcheck] must be a table, got {type(table).__name__}")
    cfg = Config(path=path, root=path.parent)
    for key, value in table.items():
        where = f"[tool.torchcheck] {key} in {path}"
        if key not in ALLOWED_KEYS:
            raise ConfigError(
                f"unknown key {key!r}{did_you_mean(key, ALLOWED_KEYS)} in [tool.torchcheck] of {path}; "
                f"allowed keys: {', '.join(ALLOWED_KEYS)}")
        if key in LIST_KEYS:
            items = _string_list(value, where)
            if key in CODE_KEYS:
                _check_codes(items, where)
            if key == "select":
                cfg.select = items
            elif key == "extend-select":
                cfg.extend_select = items
            elif key == "ignore":
                cfg.ignore = items
            elif key == "fixable":
                cfg.fixable = items
            elif key == "unfixable":
                cfg.unfixable = items
            else:
                cfg.exclude.extend(items)
        elif key in BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false, got {_show(value)}")
            if key == "preview":
                cfg.preview = value
            elif key == "respect-gitignore":
                cfg.respect_gitignore = value
            else:
                cfg.unsafe_fixes = value
        elif key == "baseline":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where} must be a file path (a non-empty string), got {_show(value)}")
            cfg.baseline = path.parent / value
        elif key == "fail-on":
            if value not in SEVERITIES:
                raise ConfigError(f"{where} must be one of {', '.join(repr(v) for v in SEVERITIES)}, "
                                  f"got {_show(value)}")
            cfg.fail_on = value
        else:  # per-file-ignores
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{where} must be a table of glob = [codes], got {_show(value)}")
            for pattern, codes in value.items():
                items = _string_list(codes, f"[tool.torchcheck.per-file-ignores] {pattern!r} in {path}")
                _check_codes(items, f"[tool.torchcheck.per-file-ignores] {pattern!r} in {path}")
                cfg.per_file_ignores[pattern] = items
    return cfg


def _string_list(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        raise ConfigError(f"{where} must be a list of strings, got the string {value!r}; "
                          f"write [{value!r}]")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, got {_show(value)}")
    return list(value)


def _check_codes(items: list[str], where: str) -> None:
    try:
        registry.expand(items, where)
    except UsageError as e:
        raise ConfigError(str(e)) from None


def _show(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"
