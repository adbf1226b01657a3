"""``torchcheck lint --diff``: print a unified diff of what ``--fix`` would change and write nothing;
exit 1 when there is a change (as Ruff).
"""

from __future__ import annotations

import sys

from lint_rules.commands.lint_run import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, collect, emit, prepare, warn_notebooks
from lint_rules.diagnostics import UNSAFE
from lint_rules.output import fix_summary, not_checked

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    from lint_rules.fixes import unified_diff

    lint = prepare(args)
    collected = collect(lint)
    results = collected.results
    chunks = [unified_diff(r.path, r.fixed.original, r.fixed.source) for r in sorted(results, key=lambda r: r.path)
              if r.fixed is not None and r.fixed.source != r.fixed.original]
    text = "".join(chunks)
    emit(lint, sys.stdout, lambda out: out.write(text))
    would = sum(len(r.fixed.applied) for r in results if r.fixed is not None)
    hidden = 0 if lint.settings.unsafe_fixes else sum(1 for r in results for f in r.findings
                                                      if f.fix is not None and f.fix.applicability == UNSAFE)
    if not args.quiet:
        print(fix_summary(would, hidden, would_fix=True), file=sys.stderr)
        if collected.unchecked:  # "No fixes available." alone would read as if every file had been looked at
            print(f"{not_checked([m for _, m in collected.unchecked])}.", file=sys.stderr)
    warn_notebooks(results)
    if collected.failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if chunks and not args.exit_zero else EXIT_OK
