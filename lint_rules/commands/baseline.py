"""``--baseline FILE`` and ``--write-baseline``: hide the findings a project has accepted, or record
every current one, for ``torchcheck lint`` and ``--fix`` (the file format is :mod:`lint_rules.baseline`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from lint_rules import baseline
from lint_rules.commands.lint_run import EXIT_ERROR, EXIT_OK, LintRun
from lint_rules.diagnostics import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable


def write(run: LintRun, findings: list[Finding], lines_of: Callable[[str], list[str] | None], failed: bool) -> int:
    """``--write-baseline``: record every finding in the baseline file, then exit 0 (2 if a file failed)."""
    n = baseline.write(Path(run.baseline), findings, line_text(lines_of))
    if not run.args.quiet:
        print(f"Wrote {n} finding{'' if n == 1 else 's'} to the baseline {run.baseline}.", file=sys.stderr)
    return EXIT_ERROR if failed else EXIT_OK


def hide(run: LintRun, findings: list[Finding], lines_of: Callable[[str], list[str] | None]) -> list[Finding]:
    """The findings the baseline does not accept; a line on standard error counts the hidden ones."""
    path = Path(run.baseline)
    shown, hidden, stale = baseline.split(findings, baseline.load(path), path.resolve().parent, line_text(lines_of))
    if not run.args.quiet and (hidden or stale):
        print(f"torchcheck: {hidden} finding{'' if hidden == 1 else 's'} in the baseline {run.baseline} not "
              f"shown" + (f"; {stale} baseline entr{'y' if stale == 1 else 'ies'} matched nothing (fixed, or "
                          "the line changed): --write-baseline drops them" if stale else ""), file=sys.stderr)
    return shown


def line_text(lines_of: Callable[[str], list[str] | None]) -> Callable[[Finding], str | None]:
    """The text of a finding's line (in its notebook cell, for a notebook), each file read once."""
    seen: dict[tuple[str, int | None], list[str] | None] = {}

    def text(f: Finding) -> str | None:
        key = (f.path, f.cell)
        if key not in seen:
            if f.cell is None:
                seen[key] = lines_of(f.path)
            else:
                from lint_rules import notebook
                from lint_rules.files import read_regular

                try:
                    cells = dict(notebook.code_cells(read_regular(f.path).decode("utf-8")))
                except (OSError, ValueError):
                    cells = {}
                seen[key] = cells.get(f.cell, "").splitlines()
        lines = seen[key]
        return lines[f.line - 1] if lines and 1 <= f.line <= len(lines) else None

    return text
