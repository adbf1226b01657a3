"""``torchcheck lint``: lint the paths (and standard input) and report the findings in the chosen
format, less those a baseline accepts; the exit code says whether any is at or above ``--fail-on``.
:func:`report` is also the end of a ``--fix`` run, which reports what is left.
"""

from __future__ import annotations

import sys

from lint_rules import registry
from lint_rules.commands.lint_run import Collected, LintRun, collect, emit, exit_code, prepare, source_lines
from lint_rules.output import write_report

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    lint = prepare(args)
    collected = collect(lint)
    return report(lint, collected, collected.stdin_source)


def report(run: LintRun, collected: Collected, stdin_text: str | None,
           fixed: list[tuple[str, str, str]] | None = None, unfixed: list[tuple[str, str]] | None = None) -> int:
    """Print what is left (``fixed``: (path, code, name) of each fix a ``--fix`` run wrote; ``unfixed``:
    the files whose fixes could not be made or written), or record it with ``--write-baseline``."""
    args = run.args
    unfixed = collected.unfixed if unfixed is None else unfixed
    failed = collected.failed or bool(unfixed)
    findings = collected.findings()
    lines_of = source_lines(run, collected, stdin_text)
    if run.baseline:
        from lint_rules.commands import baseline  # here: most runs have none

        if args.write_baseline:
            return baseline.write(run, findings, lines_of, failed)
        findings = baseline.hide(run, findings, lines_of)
    options = dict(quiet=args.quiet, show_source=args.show_source, source_lines=lines_of,
                   with_statistics=args.statistics, checked_paths=[r.path for r in collected.results],
                   successful=not failed, unchecked=collected.unchecked, unfixed=unfixed,
                   unsafe_fixes=run.settings.unsafe_fixes, fixed=fixed, show_fixes=args.show_fixes)
    if args.format == "sarif":  # rule metadata: every code that ran or was reported
        options["rules"] = [r for c in sorted(run.settings.codes | {f.code for f in findings})
                            if (r := registry.lookup(c)) is not None]
    # With --fix on standard input, standard output holds the fixed source.
    stream = sys.stderr if fixed is not None and collected.stdin is not None else sys.stdout
    emit(run, stream, lambda out: write_report(out, args.format, findings, len(collected.results), **options))
    return exit_code(run, findings, failed, bool(fixed))
