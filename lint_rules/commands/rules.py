"""``torchcheck rules``: every rule (and runtime-only check of ``torchcheck run``, tier ``runtime``) as a table of code, name, severity, tier, fix and summary that fits
in 100 columns, or, with ``--format json``, every field in full (and the address of its docs page).
"""

from __future__ import annotations

import json
import sys

from lint_rules import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

WIDTH = 100  # the table's lines, whatever the terminal: names and summaries are cut to fit
NAME_WIDTH = 36  # four names are longer: cut, rather than the summary to nothing
# The fix column: what `fix_kind` says, in a word.
_FIX = {"safe": "safe", "unsafe": "unsafe", "safe or unsafe": "mixed", "none": "-"}


def _tier(rule) -> str:
    if getattr(rule, "REMOVED", False):
        return "removed"
    if rule.CODE in registry.BUILTINS:
        return "builtin"
    if rule.CODE in registry.runtime_only_codes():
        return "runtime"  # torchcheck run's own: no lint rule
    if rule.CODE in registry.CERTAIN_CORE:
        return "core"  # a preview rule whose certain findings run by default
    return "preview" if registry.is_preview(rule.CODE) else "default"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def run(args: argparse.Namespace) -> int:
    entries = [*registry.BUILTINS.values(), *registry.all_rules().values(),
               *(registry.runtime_check(c) for c in registry.runtime_only_codes())]
    if args.format == "json":
        json.dump([{"code": r.CODE, "name": r.NAME, "summary": r.summary(), "severity": r.SEVERITY,
                    "preview": registry.is_preview(r.CODE), "certain_core": r.CODE in registry.CERTAIN_CORE,
                    "removed": bool(getattr(r, "REMOVED", False)),
                    "tier": _tier(r), "fix": registry.fix_kind(r), "url": registry.docs_url(r.NAME)}
                   for r in entries], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    name_width = min(NAME_WIDTH, max(len(r.NAME) for r in entries))
    rows = [("CODE", "NAME", "SEVERITY", "TIER", "FIX", "SUMMARY")]
    rows += [(r.CODE, _cut(r.NAME, name_width), r.SEVERITY, _tier(r), _FIX[registry.fix_kind(r)], r.summary())
             for r in entries]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    summary_width = WIDTH - sum(widths) - 2 * len(widths)
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths)]
        print("  ".join([*cells, _cut(row[5], summary_width)]).rstrip())
    return 0
