"""``torchcheck``: argument parsing and output formatting only.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from lint_rules import __version__, cache, install, registry
from lint_rules.api import Settings, files_of, lint_paths, lint_text
from lint_rules.diagnostics import UNSAFE, FileResult, Finding
from lint_rules.errors import FileError, TorchcheckError, UsageError
from lint_rules.files import display, read_regular, undecodable
from lint_rules.output import FORMATS, fix_summary, fixed_listing, not_checked, summary_of_fixes, write_report
from lint_rules.runner import decode_with_encoding

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    from typing import Callable, NoReturn, Sequence, TextIO

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SEVERITIES = ("warning", "error")  # in increasing order


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, measuring the terminal without importing ``shutil`` (and with it zlib, bz2
    and lzma) on every run: argparse builds a formatter for each argument it adds, not only for --help."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _terminal_columns() -> int:
    """What ``shutil.get_terminal_size().columns`` gives: $COLUMNS, else the terminal's width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # exit 2 with a one-line hint, never a traceback
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"torchcheck: error: {message}\n")


def _codes_arg(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _jobs_arg(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="torchcheck", description="Catch the bugs that silently ruin PyTorch training runs.")
    parser.add_argument("--version", action="version", version=f"torchcheck {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    lint = sub.add_parser("lint", help="lint files and directories")
    lint.add_argument("paths", nargs="*", metavar="PATH",
                      help="files or directories to lint (default: .); '-' reads standard input")
    lint.add_argument("--select", type=_codes_arg, action="append", metavar="CODES",
                      help="comma-separated codes or prefixes to enable (TRN1, ALL); replaces the configured set")
    lint.add_argument("--extend-select", type=_codes_arg, action="append", default=[], metavar="CODES",
                      help="codes or prefixes to enable on top of the selection")
    lint.add_argument("--preview", action=argparse.BooleanOptionalAction, default=None,
                      help="run the preview rules too (ALL and prefixes select them); "
                           "overrides the configuration's preview setting")
    lint.add_argument("--ignore", type=_codes_arg, action="append", default=[], metavar="CODES",
                      help="codes or prefixes to disable")
    lint.add_argument("--format", choices=FORMATS, default="text",
                      help="output format: text (default), concise, json, json-lines, github (workflow "
                           "annotations), junit (one test case per file), gitlab (code-quality report), sarif (SARIF "
                           "2.1.0, for GitHub code scanning)")
    lint.add_argument("--output-file", metavar="PATH", help="write the report to PATH instead of standard output")
    lint.add_argument("--show-source", action="store_true", help="text format: show each offending line with a caret")
    lint.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    lint.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    lint.add_argument("--fail-on", choices=SEVERITIES, default=None,
                      help="lowest severity that makes the exit code 1: warning (default) or error")
    lint.add_argument("--stdin-filename", metavar="PATH", help="name used for standard input in output and config")
    lint.add_argument("--config", metavar="PYPROJECT", help="read [tool.torchcheck] from this file")
    lint.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    lint.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary line")
    lint.add_argument("--jobs", "-j", type=_jobs_arg, default=None, metavar="N",
                      help="worker processes (default: number of CPU cores; 1 disables parallelism)")
    lint.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    lint.add_argument("--cache-dir", metavar="DIR", default=None,
                      help=f"where results are cached (default: {cache.DEFAULT_DIR} next to the configuration, "
                           "or in the working directory)")
    lint.add_argument("--fix", action=argparse.BooleanOptionalAction, default=False,
                      help="apply safe fixes and report what is left (with --unsafe-fixes: unsafe ones too)")
    lint.add_argument("--fix-only", action="store_true",
                      help="apply fixes as --fix does, but do not report what is left: exit 0 unless a file could "
                           "not be read or written (with --exit-non-zero-on-fix: 1 when anything was fixed)")
    lint.add_argument("--unsafe-fixes", action=argparse.BooleanOptionalAction, default=None,
                      help="count fixes that may change behaviour as fixable, and apply them with --fix "
                           "(default: the unsafe-fixes setting of [tool.torchcheck], else off)")
    lint.add_argument("--diff", action="store_true",
                      help="print a unified diff of what --fix would change, write nothing; exit 1 if any")
    lint.add_argument("--show-fixes", action="store_true", help="with --fix: list the fixes applied")
    lint.add_argument("--exit-non-zero-on-fix", action="store_true",
                      help="with --fix: exit 1 when anything was fixed, even if nothing is left")
    lint.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
                      help="when walking a directory, skip what git ignores (.gitignore, .git/info/exclude, the "
                           "global excludes file), as Ruff does (default: the respect-gitignore setting of "
                           "[tool.torchcheck], else on; files named explicitly are always linted)")
    lint.add_argument("--add-noqa", action="store_true",
                      help="end every line that has a finding with '# noqa: CODE' (merged into a noqa comment "
                           "already there), so a legacy codebase starts clean; then exit 0")
    lint.add_argument("--baseline", metavar="FILE",
                      help="do not report the findings recorded in FILE (matched by file, code and the line's text, "
                           "not its number); default: the baseline setting of [tool.torchcheck], if any")
    lint.add_argument("--write-baseline", action="store_true",
                      help="with --baseline FILE: record every current finding in FILE and exit 0")
    lint.add_argument("--show-files", action="store_true", help="list the files that would be linted, and exit")
    lint.add_argument("--show-settings", action="store_true",
                      help="print the settings that apply to the first PATH (configuration file, rules, torch bound), "
                           "and exit")
    lint.add_argument("--no-default-path", action="store_true",
                      help="with no PATH, lint nothing instead of '.' (for pre-commit hooks)")

    rules = sub.add_parser("rules", help="list every rule")
    rules.add_argument("--format", choices=("text", "json"), default="text")

    explain = sub.add_parser("explain", help="print a rule's documentation")
    explain.add_argument("code", metavar="CODE", help="a rule code such as TRN101, or its name")

    sub.add_parser("server", help="run the language server (LSP over standard input and output) for editors; "
                                  f"needs pygls: {install.server_hint()}")
    return parser


# What a shell reports for a process that SIGPIPE ended (128 + 13): `torchcheck ... | head` under
# `set -o pipefail` fails as `yes | head` does, without a traceback.
EXIT_BROKEN_PIPE = 141


def run() -> NoReturn:
    """The ``torchcheck`` command and ``python -m lint_rules``: :func:`main`, then a quick exit.

    Once the output is flushed the process ends without Python's teardown, which frees every
    object and module one by one: about 12 ms of a 0.8 s lint of torch/nn, with nothing left to do
    (every file this run writes is closed, the worker processes are joined). mypy ends the same way
    (``mypy.util.hard_exit``). :func:`main` is the same command without it, for callers that go on.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except OSError:  # a full disk, say: let the interpreter's own exit report it
        sys.exit(code)
    if "logging" in sys.modules:  # the language server's handlers: closed as at a normal exit
        sys.modules["logging"].shutdown()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # --help may meet the closed pipe too
        code = _dispatch(args)
        if code is not None:
            sys.stdout.flush()  # here, not at interpreter exit, where a closed pipe prints a traceback
            return code
    except TorchcheckError as e:
        print(f"torchcheck: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (`| head`) has gone. As CPython's signal docs recommend: point standard output at
        # devnull so the interpreter's final flush has nowhere to fail, and stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    parser.print_help(sys.stderr)
    return EXIT_ERROR


def _dispatch(args: argparse.Namespace) -> int | None:
    if args.command == "lint":
        return _lint(args)
    if args.command == "rules":
        return _rules(args)
    if args.command == "explain":
        return _explain(args)
    if args.command == "server":
        return _server()
    return None


# ------------------------------------------------------------------- lint
def _flatten(groups: list[list[str]] | None) -> list[str]:
    return [c for g in groups or [] for c in g]


def settings_of(args: argparse.Namespace) -> Settings:
    """The options of ``torchcheck lint`` resolved, with the configuration, into the API's settings."""
    return Settings.resolve(config=args.config, isolated=args.isolated, select=_flatten(args.select),
                            extend_select=_flatten(args.extend_select), ignore=_flatten(args.ignore),
                            preview=args.preview, fix=args.fix or args.diff, unsafe_fixes=args.unsafe_fixes,
                            cache=not args.no_cache, cache_dir=None if args.no_cache else args.cache_dir,
                            respect_gitignore=args.respect_gitignore, jobs=args.jobs)


def _check_fix_flags(args: argparse.Namespace, paths: list[str]) -> None:
    if args.diff and args.format != "text":
        raise UsageError(f"--diff prints a unified diff; it cannot be combined with --format {args.format}")
    if args.fix and not args.diff and "-" in paths and len(paths) > 1:
        raise UsageError("--fix with standard input ('-') writes the fixed source to standard output; "
                         "lint standard input on its own")
    if args.add_noqa and (args.fix or args.diff or "-" in paths):
        given = "--fix" if args.fix else "--diff" if args.diff else "standard input ('-')"
        raise UsageError(f"--add-noqa edits files in place; it cannot be combined with {given}")
    if args.write_baseline and not args.baseline:
        raise UsageError("--write-baseline needs --baseline FILE (or baseline = \"FILE\" in [tool.torchcheck]): "
                         "the file to write")


def _lint(args: argparse.Namespace) -> int:
    if args.fix_only:
        args.fix = True
    settings = settings_of(args)
    cfg, codes, mode, unsafe = settings.config, settings.codes, settings.fix, settings.unsafe_fixes
    if args.baseline is None and cfg.baseline is not None and not args.isolated:
        args.baseline = str(cfg.baseline)
    paths = args.paths or ([] if args.no_default_path else ["."])
    _check_fix_flags(args, paths)
    results: list[FileResult] = []
    read_errors: list[tuple[str, str]] = []  # (path, why) of each file that could not be checked
    notes: list[str] = []
    files = [p for p in paths if p != "-"]
    if args.show_files or args.show_settings:
        file_paths = files_of(files, settings, notes=notes)
        _print_notes(notes)
        if args.show_settings:
            return _show_settings(args, settings, paths)
        for path in file_paths:
            print(display(path))
        return EXIT_OK
    stdin_name = args.stdin_filename or "-"
    stdin_result: FileResult | None = None
    if "-" in paths:
        data = sys.stdin.buffer.read()
        try:
            source, _ = decode_with_encoding(data)
        except (UnicodeDecodeError, SyntaxError, LookupError) as e:
            raise UsageError(undecodable(stdin_name, data, e)) from None
        try:
            stdin_result = lint_text(source, stdin_name, settings)
        except FileError as e:
            raise UsageError(str(e)) from None
        results.append(stdin_result)
    linted = lint_paths(files, settings, notes=notes)
    for r in linted:  # in discovery order: output is deterministic whatever the job count
        if notes:
            _print_notes(notes)
        if r.error is not None:
            print(f"torchcheck: error: {r.error}", file=sys.stderr)
            read_errors.append((r.path, r.error))
        else:
            results.append(r)  # its shown path is the path to write: relative to the working directory
    _print_notes(notes)

    fix_errors = _report_fix_errors(results, mode)
    if mode is not None:
        from lint_rules.fixes import write_atomic  # here: a plain run needs no fix machinery

    if args.diff:
        return _diff(args, results, unsafe, failed=bool(read_errors or fix_errors)
                     or any(r.internal_error for r in results), unchecked=[m for _, m in read_errors])
    fixed: list[tuple[str, str, str]] = []  # (path, code, name) of every fix written
    if args.fix:
        for r in results:
            if r.fixed is None or r.fixed.source == r.fixed.original:
                continue
            if r is stdin_result:
                fixed += [(r.path, code, name) for code, name in r.fixed.applied]
                continue
            try:
                write_atomic(r.path, r.fixed.source, r.fixed.encoding)
            except OSError as e:
                fix_errors.append((r.path, f"cannot write {r.path}: {e.strerror or e}; the file was left unchanged"))
                print(f"torchcheck: error: {fix_errors[-1][1]}", file=sys.stderr)
                continue
            fixed += [(r.path, code, name) for code, name in r.fixed.applied]
        if stdin_result is not None:  # the fixed source goes to standard output, as Ruff does
            text = stdin_result.fixed.source if stdin_result.fixed is not None else source
            sys.stdout.write(text)
            sys.stdout.flush()
        _warn_notebooks(results)

    failed = bool(read_errors or fix_errors) or any(r.internal_error for r in results)
    if args.fix_only:
        return _fix_only_report(args, fixed, len(results), failed, stdin_result is not None, read_errors, fix_errors)
    findings = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    stdin_lines = (stdin_result.fixed.source if stdin_result is not None and stdin_result.fixed is not None
                   and args.fix else source).splitlines() if "-" in paths else None

    def lines_of(shown: str) -> list[str] | None:
        if stdin_lines is not None and shown == stdin_name:
            return stdin_lines
        try:
            return read_regular(shown).decode("utf-8", errors="replace").splitlines()  # never blocks on a FIFO
        except OSError:
            return None

    if args.add_noqa:
        return _add_noqa(results, failed, args.quiet)
    if args.baseline:
        from lint_rules import baseline

        line_text = _line_text(lines_of)
        path = Path(args.baseline)
        if args.write_baseline:
            n = baseline.write(path, findings, line_text)
            if not args.quiet:
                print(f"Wrote {n} finding{'' if n == 1 else 's'} to the baseline {args.baseline}.", file=sys.stderr)
            return EXIT_ERROR if failed else EXIT_OK
        findings, hidden, stale = baseline.split(findings, baseline.load(path), path.resolve().parent, line_text)
        if not args.quiet and (hidden or stale):
            print(f"torchcheck: {hidden} finding{'' if hidden == 1 else 's'} in the baseline {args.baseline} not "
                  f"shown" + (f"; {stale} baseline entr{'y' if stale == 1 else 'ies'} matched nothing (fixed, or "
                              "the line changed): --write-baseline drops them" if stale else ""), file=sys.stderr)
    report = dict(quiet=args.quiet, show_source=args.show_source, source_lines=lines_of,
                  with_statistics=args.statistics, checked_paths=[r.path for r in results],
                  successful=not failed, unchecked=read_errors, unfixed=fix_errors,
                  unsafe_fixes=unsafe, fixed=fixed if args.fix else None, show_fixes=args.show_fixes)
    if args.format == "sarif":  # rule metadata: every code that ran or was reported
        report["rules"] = [r for c in sorted(codes | {f.code for f in findings})
                           if (r := registry.lookup(c)) is not None]
    # With --fix on standard input, standard output holds the fixed source.
    _emit(args, sys.stderr if args.fix and stdin_result is not None else sys.stdout,
          lambda out: write_report(out, args.format, findings, len(results), **report))
    if failed:
        return EXIT_ERROR
    if fixed and args.exit_non_zero_on_fix:
        return EXIT_FINDINGS
    fail_on = SEVERITIES.index(args.fail_on or cfg.fail_on or "warning")
    failing = [f for f in findings if SEVERITIES.index(f.severity) >= fail_on]
    if failing and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"torchcheck: warning: {note}", file=sys.stderr)
    notes.clear()


def _line_text(lines_of: Callable[[str], list[str] | None]) -> Callable[[Finding], str | None]:
    """The text of a finding's line (in its notebook cell, for a notebook), each file read once."""
    seen: dict[tuple[str, int | None], list[str] | None] = {}

    def text(f: Finding) -> str | None:
        key = (f.path, f.cell)
        if key not in seen:
            if f.cell is None:
                seen[key] = lines_of(f.path)
            else:
                from lint_rules import notebook

                try:
                    cells = dict(notebook.code_cells(read_regular(f.path).decode("utf-8")))
                except (OSError, ValueError):
                    cells = {}
                seen[key] = cells.get(f.cell, "").splitlines()
        lines = seen[key]
        return lines[f.line - 1] if lines and 1 <= f.line <= len(lines) else None

    return text


def _add_noqa(results: list[FileResult], failed: bool, quiet: bool) -> int:
    """``--add-noqa``: suppress every current finding where it is, so only new code is held to the rules."""
    from lint_rules.fixes import add_noqa, write_atomic
    from lint_rules.runner import decode_with_encoding as decode

    added = files = 0
    for r in results:
        wanted: dict[int, set[str]] = {}
        for f in r.findings:
            if f.code not in registry.BUILTINS:  # a syntax error or a crash is not to be silenced
                wanted.setdefault(f.line, set()).add(f.code)
        if not wanted:
            continue
        if r.path.endswith(".ipynb"):
            print(f"torchcheck: warning: {r.path}: --add-noqa does not edit notebooks", file=sys.stderr)
            continue
        try:
            where = r.path
            source, encoding = decode(read_regular(where))
            new, n, skipped = add_noqa(source, wanted)
            if n:
                write_atomic(where, new, encoding)
        except OSError as e:
            print(f"torchcheck: error: cannot add noqa comments to {r.path}: {e.strerror}", file=sys.stderr)
            failed = True
            continue
        if skipped:
            print(f"torchcheck: warning: {r.path}: no comment can end line {', '.join(map(str, skipped))} (inside "
                  "a multi-line string or continued with a backslash); add a suppression there by hand",
                  file=sys.stderr)
        added += n
        files += bool(n)
    if not quiet:
        print(f"Added {added} noqa code{'' if added == 1 else 's'} to {files} file{'' if files == 1 else 's'}.")
    return EXIT_ERROR if failed else EXIT_OK


def _show_settings(args: argparse.Namespace, settings: Settings, paths: list[str]) -> int:
    """``--show-settings``: what applies to the first path, and where each part comes from."""
    cfg, codes, unfixable = settings.config, settings.codes, settings.unfixable
    target = Path(next((p for p in paths if p != "-"), "."))
    here = set(settings.codes_for(target))
    project = settings.project_for(target / "_" if target.is_dir() else target)
    bound = (f">= {project.torch_min_version[0]}.{project.torch_min_version[1]} (from {project.source})"
             if project.torch_min_version else "none stated (rules assume any torch version)")
    rows = [
        ("path", display(target)),
        ("configuration", f"{cfg.path} [tool.torchcheck]" if cfg.path else
         ("none (--isolated)" if args.isolated else "none found: the defaults")),
        ("rules", f"{len(here)}: {', '.join(sorted(here))}" if here else "none"),
        ("turned off here by per-file-ignores", ", ".join(sorted(codes - here)) or "none"),
        ("torch lower bound", bound),
        ("fail on", args.fail_on or cfg.fail_on or "warning"),
        ("unsafe fixes", "on" if settings.unsafe_fixes else "off"),
        ("unfixable", ", ".join(unfixable) or "none"),
        ("exclude", ", ".join(cfg.exclude) or "none"),
        ("respect .gitignore", "yes" if settings.respect_gitignore else "no"),
        ("cache", settings.cache_dir or "off"),
        ("baseline", args.baseline or "none"),
    ]
    width = max(len(k) for k, _ in rows) + 1
    for key, value in rows:
        print(f"{key + ':':<{width}}  {value}")
    return EXIT_OK


def _emit(args: argparse.Namespace, stream: TextIO, write: Callable[[TextIO], object]) -> None:
    """Run ``write(out)`` on ``--output-file`` if one was given, else on ``stream``."""
    if not args.output_file:
        write(stream)
        return
    try:
        with open(args.output_file, "w", encoding="utf-8") as out:
            write(out)
    except OSError as e:
        raise UsageError(f"--output-file {args.output_file!r}: cannot write: {e.strerror}") from None


def _fix_only_report(args: argparse.Namespace, fixed: list[tuple[str, str, str]], checked: int, failed: bool,
                     fixed_stdin: bool, unchecked: list[tuple[str, str]], unfixed: list[tuple[str, str]]) -> int:
    """``--fix-only``: what was fixed, never what is left (as Ruff's ``--fix-only``)."""
    if args.format != "text" or args.output_file:
        # Machine-readable output: no findings, so tools reading it see none left to act on; the errors stay.
        _emit(args, sys.stdout, lambda out: write_report(out, args.format, [], checked, successful=not failed,
                                                         unchecked=unchecked, unfixed=unfixed))
    else:
        stream = sys.stderr if fixed_stdin else sys.stdout
        if args.show_fixes and fixed:
            stream.write(fixed_listing(fixed) + "\n")
        if not args.quiet:
            stream.write(summary_of_fixes(len(fixed), checked, [m for _, m in unchecked], [m for _, m in unfixed])
                         + "\n")
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if fixed and args.exit_non_zero_on_fix else EXIT_OK


def _report_fix_errors(results: list[FileResult], mode: str | None) -> list[tuple[str, str]]:
    errors = []
    for r in results:
        if mode is not None and r.fixed is not None and r.fixed.error:
            errors.append((r.path, f"{r.path}: {r.fixed.error}"))
            print(f"torchcheck: error: {errors[-1][1]}", file=sys.stderr)
    return errors


def _warn_notebooks(results: list[FileResult]) -> None:
    for r in results:
        if r.notebook_fixes:
            print(f"torchcheck: warning: {r.path}: {r.notebook_fixes} fixable finding(s) not fixed: "
                  "--fix does not edit notebooks", file=sys.stderr)


def _diff(args: argparse.Namespace, results: list[FileResult], unsafe: bool, failed: bool,
          unchecked: list[str]) -> int:
    """--diff: print what --fix would change, write nothing; exit 1 when there is a change (as Ruff)."""
    from lint_rules.fixes import unified_diff

    chunks = [unified_diff(r.path, r.fixed.original, r.fixed.source) for r in sorted(results, key=lambda r: r.path)
              if r.fixed is not None and r.fixed.source != r.fixed.original]
    text = "".join(chunks)
    _emit(args, sys.stdout, lambda out: out.write(text))
    would = sum(len(r.fixed.applied) for r in results if r.fixed is not None)
    hidden = 0 if unsafe else sum(1 for r in results for f in r.findings
                                  if f.fix is not None and f.fix.applicability == UNSAFE)
    if not args.quiet:
        print(fix_summary(would, hidden, would_fix=True), file=sys.stderr)
        if unchecked:  # "No fixes available." alone would read as if every file had been looked at
            print(f"{not_checked(unchecked)}.", file=sys.stderr)
    _warn_notebooks(results)
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if chunks and not args.exit_zero else EXIT_OK


# ------------------------------------------------------------ rules/explain
def _rules(args: argparse.Namespace) -> int:
    entries = [*registry.BUILTINS.values(), *registry.all_rules().values()]
    if args.format == "json":
        json.dump([{"code": r.CODE, "name": r.NAME, "summary": r.summary(), "severity": r.SEVERITY,
                    "preview": registry.is_preview(r.CODE),
                    "removed": bool(getattr(r, "REMOVED", False))} for r in entries], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    width = max(len(r.NAME) for r in entries)
    for r in entries:
        removed = " (removed)" if getattr(r, "REMOVED", False) else ""
        tier = " (preview)" if registry.is_preview(r.CODE) else ""
        print(f"{r.CODE}  {r.NAME:<{width}}  {r.summary()}{removed}{tier}")
    return EXIT_OK


def _server() -> int:
    """``torchcheck server``: pygls is imported here only, so the base install never needs it."""
    try:
        from lint_rules.server import main as serve
    except ImportError as e:
        if (e.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        raise UsageError(f"torchcheck server needs pygls ({e}); install it with: {install.server_hint()}") from None
    return serve()


def _explain(args: argparse.Namespace) -> int:
    wanted = args.code.strip()
    rule = registry.lookup(wanted.upper())
    if rule is None:
        for r in [*registry.BUILTINS.values(), *registry.all_rules().values()]:
            if r.NAME == wanted:
                rule = r
    if rule is None:
        raise UsageError(f"unknown rule {wanted!r}; run `torchcheck rules` to list them "
                         f"({', '.join(registry.known_codes())})")
    print(f"# {rule.CODE} {rule.NAME}\n")
    print(f"{rule.summary()}\n")
    print(rule.documentation())
    fix = getattr(rule, "FIX_TITLE", None)
    if fix:
        print(f"\n## Fix\n{fix}")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    run()
