"""What every mode of ``torchcheck lint`` shares: the options resolved once into a :class:`LintRun`
(checked for combinations that make no sense), standard input and the paths linted through
:mod:`lint_rules.api` into :class:`Collected` results, warnings printed as they come, the report
written to ``--output-file`` or a stream, the source lines of a finding, and the exit code.
"""

from __future__ import annotations

import sys

from lint_rules import api
from lint_rules.diagnostics import FileResult, Finding
from lint_rules.errors import FileError, UsageError
from lint_rules.records import factory, record

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    import argparse
    from typing import Callable, TextIO

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SEVERITIES = ("warning", "error")  # in increasing order


@record(frozen=True)
class LintRun:
    """One ``torchcheck lint``: its parsed options (read, never changed) and what they resolve to."""

    args: object  # the argparse namespace
    settings: api.Settings
    paths: tuple  # what to lint; "-" is standard input
    baseline: str | None  # --baseline, else the configuration's
    fix: bool  # --fix or --fix-only: write the fixes

    @property
    def stdin_name(self) -> str:
        return self.args.stdin_filename or "-"

    @property
    def files(self) -> list[str]:
        return [p for p in self.paths if p != "-"]

    @property
    def fail_on(self) -> str:
        return self.args.fail_on or self.settings.config.fail_on or "warning"


def _flatten(groups: list[list[str]] | None) -> list[str]:
    return [c for g in groups or [] for c in g]


def settings_of(args: argparse.Namespace) -> api.Settings:
    """The options of ``torchcheck lint`` resolved, with the configuration, into the API's settings."""
    return api.Settings.resolve(config=args.config, isolated=args.isolated, select=_flatten(args.select),
                                extend_select=_flatten(args.extend_select), ignore=_flatten(args.ignore),
                                preview=args.preview, fix=args.fix or args.fix_only or args.diff,
                                unsafe_fixes=args.unsafe_fixes, cache=not args.no_cache,
                                cache_dir=None if args.no_cache else args.cache_dir,
                                respect_gitignore=args.respect_gitignore, jobs=args.jobs)


def prepare(args: argparse.Namespace) -> LintRun:
    """Resolve the options; a :class:`UsageError` for a combination that cannot work."""
    settings = settings_of(args)
    cfg = settings.config
    baseline = args.baseline
    if baseline is None and cfg.baseline is not None and not args.isolated:
        baseline = str(cfg.baseline)
    paths = tuple(args.paths or ([] if args.no_default_path else ["."]))
    fix = bool(args.fix or args.fix_only)
    if args.diff and args.format != "text":
        raise UsageError(f"--diff prints a unified diff; it cannot be combined with --format {args.format}")
    if fix and not args.diff and "-" in paths and len(paths) > 1:
        raise UsageError("--fix with standard input ('-') writes the fixed source to standard output; "
                         "lint standard input on its own")
    if args.add_noqa and (fix or args.diff or "-" in paths):
        given = "--fix" if fix else "--diff" if args.diff else "standard input ('-')"
        raise UsageError(f"--add-noqa edits files in place; it cannot be combined with {given}")
    if args.write_baseline and not baseline:
        raise UsageError("--write-baseline needs --baseline FILE (or baseline = \"FILE\" in [tool.torchcheck]): "
                         "the file to write")
    return LintRun(args, settings, paths, baseline, fix)


@record(frozen=True)
class Collected:
    """The results of one run, standard input's first, then the files' in discovery order."""

    results: list  # FileResult of every file checked
    stdin: FileResult | None = None
    stdin_source: str | None = None  # standard input's text as read
    unchecked: list = factory(list)  # (path, error) of each file that could not be read, decoded or parsed
    unfixed: list = factory(list)  # (path, error) of each file whose fixes could not be made or written

    @property
    def failed(self) -> bool:
        return bool(self.unchecked or self.unfixed) or any(r.internal_error for r in self.results)

    def findings(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.findings), key=Finding.sort_key)


def collect(run: LintRun) -> Collected:
    """Lint standard input and the paths; print each file's error and the walk's warnings as they come."""
    settings = run.settings
    results: list[FileResult] = []
    unchecked: list[tuple[str, str]] = []
    notes: list[str] = []
    stdin_result = source = None
    if "-" in run.paths:
        data = sys.stdin.buffer.read()
        try:
            source, _ = api.decode_source(data, run.stdin_name)
            stdin_result = api.lint_text(source, run.stdin_name, settings)
        except FileError as e:
            raise UsageError(str(e)) from None
        results.append(stdin_result)
    for r in api.lint_paths(run.files, settings, notes=notes):  # discovery order, whatever the job count
        if notes:
            print_notes(notes)
        if r.error is not None:
            print(f"torchcheck: error: {r.error}", file=sys.stderr)
            unchecked.append((r.path, r.error))
        else:
            results.append(r)  # its shown path is the path to write: relative to the working directory
    print_notes(notes)
    unfixed = []
    if settings.fix is not None:
        for r in results:
            if r.fixed is not None and r.fixed.error:
                unfixed.append((r.path, f"{r.path}: {r.fixed.error}"))
                print(f"torchcheck: error: {unfixed[-1][1]}", file=sys.stderr)
    return Collected(results, stdin_result, source, unchecked, unfixed)


def print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"torchcheck: warning: {note}", file=sys.stderr)
    notes.clear()


def warn_notebooks(results: list[FileResult]) -> None:
    for r in results:
        if r.notebook_fixes:
            print(f"torchcheck: warning: {r.path}: {r.notebook_fixes} fixable finding(s) not fixed: "
                  "--fix does not edit notebooks", file=sys.stderr)


def emit(run: LintRun, stream: TextIO, write: Callable[[TextIO], object]) -> None:
    """Run ``write(out)`` on ``--output-file`` if one was given, else on ``stream``."""
    output_file = run.args.output_file
    if not output_file:
        write(stream)
        return
    try:
        with open(output_file, "w", encoding="utf-8") as out:
            write(out)
    except OSError as e:
        raise UsageError(f"--output-file {output_file!r}: cannot write: {e.strerror}") from None


def source_lines(run: LintRun, collected: Collected, stdin_text: str | None) -> Callable[[str], list[str] | None]:
    """The lines of a shown path (standard input's are ``stdin_text``), for ``--show-source`` and baselines."""
    from lint_rules.files import read_regular

    stdin_lines = stdin_text.splitlines() if collected.stdin is not None and stdin_text is not None else None

    def lines_of(shown: str) -> list[str] | None:
        if stdin_lines is not None and shown == run.stdin_name:
            return stdin_lines
        try:
            return read_regular(shown).decode("utf-8", errors="replace").splitlines()  # never blocks on a FIFO
        except OSError:
            return None

    return lines_of


def exit_code(run: LintRun, findings: list[Finding], failed: bool, fixed: bool) -> int:
    """2 when something failed; 1 for a finding at or above --fail-on (or, with --exit-non-zero-on-fix,
    for anything fixed) unless --exit-zero; else 0."""
    if failed:
        return EXIT_ERROR
    if fixed and run.args.exit_non_zero_on_fix:
        return EXIT_FINDINGS
    fail_on = SEVERITIES.index(run.fail_on)
    if any(SEVERITIES.index(f.severity) >= fail_on for f in findings) and not run.args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK
