"""Whole-file cases whose bugs are visible only through helpers of the same file, each
with a near-miss twin that must stay quiet. Expected findings are marked
``# EXPECT CODE ...`` on their lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lint_rules.engine import lint_source
from lint_rules.registry import default_codes

CASES = Path(__file__).parent / "helpers_cases"
_EXPECT = re.compile(r"#\s*EXPECT((?:\s+TRN\d{3})+)")


def _expected(source: str) -> set[tuple[int, str]]:
    out = set()
    for i, line in enumerate(source.splitlines(), 1):
        m = _EXPECT.search(line)
        if m:
            out.update((i, code) for code in m.group(1).split())
    return out


@pytest.mark.parametrize("path", sorted(CASES.glob("*.py")), ids=lambda p: p.stem)
def test_helper_case(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    result = lint_source(source, str(path), default_codes(preview=True))  # every rule, preview included
    assert not result.internal_error
    found = {(f.line, f.code) for f in result.findings}
    assert found == _expected(source)
