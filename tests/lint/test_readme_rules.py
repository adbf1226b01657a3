"""The README's rule table lists exactly the registered rules, with their names and severities."""

from __future__ import annotations

import re
from pathlib import Path

from lint_rules import registry

README = Path(__file__).resolve().parents[2] / "README.md"


def _table_rows() -> dict[str, tuple[str, str, str]]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Rules", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\|\s*(TRN\d{3})\s*\|\s*([a-z0-9-]+)\s*\|.*\|\s*(default|preview|built-in)\s*\|"
                     r"\s*(error|warning)\s*\|\s*$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return rows


def test_readme_rule_table_matches_registry():
    expected = {code: (r.NAME, "preview" if registry.is_preview(code) else "default", r.SEVERITY)
                for code, r in registry.all_rules().items()}
    expected.update({code: (b.NAME, "built-in", b.SEVERITY) for code, b in registry.BUILTINS.items()})
    assert _table_rows() == expected
