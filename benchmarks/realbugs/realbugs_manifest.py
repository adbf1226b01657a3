"""Reading the real-bug benchmark: manifest.toml cases and the reductions/ folder.

Shared by fetch_cases.py, score.py and the tests; errors name the file, the case and the key.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SHAPES = ("direct", "helper", "cross-file", "container", "branch", "spelling", "rule-missing")
_SHA = re.compile(r"[0-9a-f]{40}")
_CODE = re.compile(r"TRN\d{3}")
_REQUIRED = ("id", "repository", "fix_commit", "parent_commit", "path", "expected", "shape", "bug", "source")
# The first line of a reduction's scored file: `# realbug-expected: TRN601 shape=helper case=<id>`
_HEADER = re.compile(r"#\s*realbug-expected:\s*(?P<code>\S+)(?P<rest>.*)")


class ManifestError(ValueError):
    """The manifest or a reduction is malformed; the message says where and what is allowed."""


@dataclass(frozen=True)
class Case:
    id: str
    repository: str
    fix_commit: str
    parent_commit: str
    path: str
    path_before: str
    expected: str
    shape: str
    bug: str
    source: str
    context: tuple[str, ...] = ()

    def file(self, root: Path, commit: str, path: str) -> Path:
        return root / self.repository.replace("/", "+") / commit / path

    @property
    def before(self) -> tuple[str, str]:
        return self.parent_commit, self.path_before

    @property
    def after(self) -> tuple[str, str]:
        return self.fix_commit, self.path


def load_manifest(path: Path) -> list[Case]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ManifestError(f"{path}: cannot read the manifest: {e}") from e
    raw = data.get("case")
    if not isinstance(raw, list) or not raw:
        raise ManifestError(f"{path}: no [[case]] tables")
    cases: list[Case] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw, 1):
        where = f"{path}: case {i} ({entry.get('id', '?')})"
        missing = [k for k in _REQUIRED if not isinstance(entry.get(k), str) or not entry[k]]
        if missing:
            raise ManifestError(f"{where}: missing or empty {', '.join(missing)}")
        for key in ("fix_commit", "parent_commit"):
            if not _SHA.fullmatch(entry[key]):
                raise ManifestError(f"{where}: {key} = {entry[key]!r} is not a full 40-hex-digit commit")
        if not _CODE.fullmatch(entry["expected"]):
            raise ManifestError(f"{where}: expected = {entry['expected']!r} is not a TRNnnn code")
        if entry["shape"] not in SHAPES:
            raise ManifestError(f"{where}: shape = {entry['shape']!r}; allowed: {', '.join(SHAPES)}")
        if entry["id"] in seen:
            raise ManifestError(f"{where}: duplicate id {entry['id']!r}")
        seen.add(entry["id"])
        context = entry.get("context", [])
        if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
            raise ManifestError(f"{where}: context must be a list of paths, got {context!r}")
        cases.append(Case(entry["id"], entry["repository"], entry["fix_commit"], entry["parent_commit"],
                          entry["path"], entry.get("path_before", entry["path"]), entry["expected"],
                          entry["shape"], entry["bug"], entry["source"], tuple(context)))
    return cases


@dataclass(frozen=True)
class Reduction:
    """One reduction: a folder with before/ and after/ trees; one file in each is scored."""

    name: str
    expected: str
    shape: str
    case: str
    before: Path
    after: Path
    extras: dict[str, str] = field(default_factory=dict)


def _header(path: Path) -> tuple[str, dict[str, str]] | None:
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    m = _HEADER.match(first[0]) if first else None
    if m is None:
        return None
    extras = dict(part.split("=", 1) for part in m["rest"].split() if "=" in part)
    return m["code"], extras


def load_reductions(folder: Path) -> list[Reduction]:
    """Every reduction under ``folder``; the scored file of each side starts with a realbug header."""
    reductions = []
    for entry in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        sides = {}
        for side in ("before", "after"):
            tree = entry / side
            if not tree.is_dir():
                raise ManifestError(f"{entry}: no {side}/ folder (a reduction has before/ and after/)")
            headed = [(p, h) for p in sorted(tree.rglob("*.py")) if (h := _header(p)) is not None]
            if len(headed) != 1:
                raise ManifestError(f"{tree}: {len(headed)} files start with '# realbug-expected: TRNnnn'; "
                                    "exactly one (the file to score) must")
            sides[side] = headed[0]
        (before, (code, extras)), (after, (after_code, _)) = sides["before"], sides["after"]
        if code != after_code:
            raise ManifestError(f"{entry}: before/ expects {code}, after/ expects {after_code}")
        if not _CODE.fullmatch(code):
            raise ManifestError(f"{before}: expected code {code!r} is not a TRNnnn code")
        shape = extras.get("shape", "")
        if shape not in SHAPES:
            raise ManifestError(f"{before}: shape={shape!r}; allowed: {', '.join(SHAPES)}")
        reductions.append(Reduction(entry.name, code, shape, extras.get("case", ""), before, after, extras))
    return reductions
