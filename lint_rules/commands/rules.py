"""``torchcheck rules``: every rule, as a table or as JSON (``--format json``)."""

from __future__ import annotations

import json
import sys

from lint_rules import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    entries = [*registry.BUILTINS.values(), *registry.all_rules().values()]
    if args.format == "json":
        json.dump([{"code": r.CODE, "name": r.NAME, "summary": r.summary(), "severity": r.SEVERITY,
                    "preview": registry.is_preview(r.CODE),
                    "removed": bool(getattr(r, "REMOVED", False))} for r in entries], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    width = max(len(r.NAME) for r in entries)
    for r in entries:
        removed = " (removed)" if getattr(r, "REMOVED", False) else ""
        tier = " (preview)" if registry.is_preview(r.CODE) else ""
        print(f"{r.CODE}  {r.NAME:<{width}}  {r.summary()}{removed}{tier}")
    return 0
