"""``torchcheck lint --fix`` and ``--fix-only``: write each file's fixed text in place (standard
input's to standard output, as Ruff does), then report what is left, or, with ``--fix-only``, only
what was fixed.
"""

from __future__ import annotations

import sys

from lint_rules.commands import check
from lint_rules.commands.lint_run import (EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, Collected, LintRun, collect, emit,
                                          prepare, warn_notebooks)
from lint_rules.output import fixed_listing, summary_of_fixes, write_report
from lint_rules.records import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    lint = prepare(args)
    collected = collect(lint)
    fixed, unfixed, collected = write_fixes(collected)
    stdin = collected.stdin
    stdin_text = None
    if stdin is not None:  # the fixed source goes to standard output
        stdin_text = stdin.fixed.source if stdin.fixed is not None else collected.stdin_source
        sys.stdout.write(stdin_text)
        sys.stdout.flush()
    warn_notebooks(collected.results)
    if args.fix_only:
        return _fix_only_report(lint, collected, fixed, unfixed)
    return check.report(lint, collected, stdin_text, fixed=fixed, unfixed=unfixed)


def write_fixes(collected: Collected) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]], Collected]:
    """Write every fixed file. Returns (path, code, name) of each fix written; (path, error) of each file
    whose fixes could not be made or written (the engine's and the writes' together); and the results
    as they now stand on disk: a file that could not be written keeps the findings of its original text."""
    from lint_rules.fixes import write_atomic  # here: a plain run needs no fix machinery

    fixed: list[tuple[str, str, str]] = []
    unfixed = list(collected.unfixed)
    results = []
    for r in collected.results:
        results.append(r)
        if r.fixed is None or r.fixed.source == r.fixed.original:
            continue
        if r is not collected.stdin:
            try:
                write_atomic(r.path, r.fixed.source, r.fixed.encoding)
            except OSError as e:
                unfixed.append((r.path, f"cannot write {r.path}: {e.strerror or e}; the file was left unchanged"))
                print(f"torchcheck: error: {unfixed[-1][1]}", file=sys.stderr)
                results[-1] = replace(r, findings=r.fixed.original_findings, fixed=None)
                continue
        fixed += [(r.path, code, name) for code, name in r.fixed.applied]
    return fixed, unfixed, replace(collected, results=results, unfixed=unfixed)


def _fix_only_report(run: LintRun, collected: Collected, fixed: list[tuple[str, str, str]],
                     unfixed: list[tuple[str, str]]) -> int:
    """``--fix-only``: what was fixed, never what is left (as Ruff's ``--fix-only``)."""
    args = run.args
    failed = collected.failed or bool(unfixed)
    checked = len(collected.results)
    if args.format != "text" or args.output_file:
        # Machine-readable output: no findings, so tools reading it see none left to act on; the errors stay.
        emit(run, sys.stdout, lambda out: write_report(out, args.format, [], checked, successful=not failed,
                                                       unchecked=collected.unchecked, unfixed=unfixed))
    else:
        stream = sys.stderr if collected.stdin is not None else sys.stdout
        if args.show_fixes and fixed:
            stream.write(fixed_listing(fixed) + "\n")
        if not args.quiet:
            stream.write(summary_of_fixes(len(fixed), checked, [m for _, m in collected.unchecked],
                                          [m for _, m in unfixed]) + "\n")
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if fixed and args.exit_non_zero_on_fix else EXIT_OK
