"""Reading the mined benchmark's manifest.toml: benchmarks/realbugs' schema plus `half` and `family`.

Validation is realbugs_manifest.load_manifest's (full commits, TRN codes, shapes, unique ids); this
adds the half of each case, checked against split.py so a case cannot sit in the wrong half.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "realbugs"))

from realbugs_manifest import Case, ManifestError, load_manifest  # noqa: E402
from split import half  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MANIFEST = HERE / "manifest.toml"


@dataclass(frozen=True)
class MinedCase:
    case: Case
    half: str
    family: str

    def tree(self, root: Path, commit: str) -> Path:
        """Where materialise.py writes the repository's tree at ``commit``."""
        return root / self.case.repository.replace("/", "+") / commit

    def hunks_file(self, root: Path) -> Path:
        return root / "_hunks" / f"{self.case.id}.json"


def load(path: Path = MANIFEST) -> list[MinedCase]:
    cases = load_manifest(path)
    raw = {entry["id"]: entry for entry in tomllib.loads(path.read_text(encoding="utf-8"))["case"]}
    out = []
    for case in cases:
        entry = raw[case.id]
        want = half(case.repository)
        if entry.get("half") != want:
            raise ManifestError(f"{path}: case {case.id}: half = {entry.get('half')!r}, but split.py puts "
                                f"{case.repository} in {want!r}")
        out.append(MinedCase(case, want, entry.get("family", "")))
    return out
