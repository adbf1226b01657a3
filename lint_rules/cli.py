"""``torchcheck``: parse the arguments and hand them to one command of :mod:`lint_rules.commands`.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import os
import sys

from lint_rules import __version__, cache, install
from lint_rules.commands.lint_run import EXIT_ERROR, SEVERITIES
from lint_rules.errors import TorchcheckError
from lint_rules.output import FORMATS

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    from typing import Callable, NoReturn, Sequence


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

    def parse_known_args(self, args=None, namespace=None):
        # argparse hands what a subcommand does not know back to the top-level parser, which then
        # prints its own usage: `torchcheck lint --selct` must print lint's, and say what was meant.
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._suggestion(extras)}")
        return namespace, extras

    def _suggestion(self, extras: list[str]) -> str:
        from lint_rules.errors import did_you_mean

        for extra in extras:
            if extra.startswith("--"):
                hint = did_you_mean(extra.split("=", 1)[0], [o for o in self._option_string_actions if o.startswith("--")])
                if hint:
                    return hint
        return ""


def _codes_arg(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _whole_number(what: str):
    """An argparse type: a whole number of ``what``, at least 1; anything else names the bad value."""
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number of {what}, got {value!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
        return n
    return parse


_jobs_arg = _whole_number("processes")
_steps_arg = _whole_number("optimizer steps")


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

    run = sub.add_parser("run", help="run a training script (python SCRIPT ARGS, or -m MODULE) with runtime checks "
                                     "and report the bugs they saw; imports torch",
                         usage="torchcheck run [OPTIONS] (SCRIPT | -m MODULE) [ARGS...]")
    run.add_argument("script", nargs="?", metavar="SCRIPT",
                     help="the program to run, followed by its arguments (everything after it is the program's)")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module as python -m does")
    run.add_argument("--select", type=_codes_arg, action="append", metavar="CODES",
                     help="comma-separated codes or prefixes of the runtime checks to run (default: all)")
    run.add_argument("--ignore", type=_codes_arg, action="append", default=[], metavar="CODES",
                     help="codes or prefixes of runtime checks not to run")
    run.add_argument("--format", choices=FORMATS, default="text", help="report format, as for lint")
    run.add_argument("--output-file", metavar="PATH",
                     help="write the report to PATH instead of standard error")
    run.add_argument("--max-steps", type=_steps_arg, default=None, metavar="N",
                     help="end the program cleanly after N optimizer steps (a CI smoke run)")
    run.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary line")
    run.set_defaults(program=[])
    # What follows SCRIPT is the program's: splitting it off needs to know which options take a value.
    parser.run_value_options = {o for a in run._actions if a.nargs != 0 for o in a.option_strings}

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
    if "lint_rules.commands.run" in sys.modules:
        # `torchcheck run` ran a program: it ends as `python` would end it, with its atexit handlers (a
        # logger's last flush, a tracker's upload) and its non-daemon threads joined.
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except OSError:  # standard error on a full disk: nowhere left to say so
        sys.exit(code)
    if "logging" in sys.modules:  # the language server's handlers: closed as at a normal exit
        sys.modules["logging"].shutdown()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    stdout = sys.stdout
    sys.stdout = output = _Output(stdout)
    try:
        args = _parse(parser, sys.argv[1:] if argv is None else list(argv))  # --help may meet the closed pipe too
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
        _to_devnull(stdout)
        return EXIT_BROKEN_PIPE
    except _NotWritten as e:  # a full disk (`> /dev/full`), a quota: the report is lost, say so once
        _to_devnull(stdout)
        print(f"torchcheck: cannot write the report to standard output: {e.reason}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if sys.stdout is output:  # unless the command put another in its place (the server, once pygls closed it)
            sys.stdout = stdout
    parser.print_help(sys.stderr)
    return EXIT_ERROR


class _NotWritten(Exception):
    """Standard output refused a write (not a closed pipe): raised instead of the OSError, which a
    command could mistake for one of its own files' errors."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.reason = error.strerror or str(error)


class _Output:
    """Standard output while a command runs: its write errors become :class:`_NotWritten`."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise _NotWritten(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise _NotWritten(e) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _to_devnull(stdout) -> None:
    """Point standard output's descriptor at devnull, so that the final flush of what is still buffered
    has nowhere to fail."""
    try:
        fd = stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (a test's StringIO)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The arguments; for ``run``, what follows SCRIPT or ``-m MODULE`` is the program's and is kept
    apart before argparse sees it (argparse would take the program's options for ``run``'s)."""
    if not argv or argv[0] != "run":
        return parser.parse_args(argv)
    from lint_rules.commands.run import split_command_line

    own, program = split_command_line(argv[1:], parser.run_value_options)
    args = parser.parse_args(["run", *own])
    args.program = program
    return args


def _dispatch(args: argparse.Namespace) -> int | None:
    command = _command(args)
    return command(args) if command is not None else None


def _command(args: argparse.Namespace) -> Callable[[argparse.Namespace], int] | None:
    """The ``run`` of the command module the arguments ask for (each imported only when it runs)."""
    if args.command == "lint":
        # One mode per run, in this order: the modes that print something else than a report first.
        if args.show_settings:
            from lint_rules.commands import show_settings as command
        elif args.show_files:
            from lint_rules.commands import show_files as command
        elif args.add_noqa:
            from lint_rules.commands import add_noqa as command
        elif args.diff:
            from lint_rules.commands import diff as command
        elif args.fix or args.fix_only:
            from lint_rules.commands import fix as command
        else:
            from lint_rules.commands import check as command
    elif args.command == "rules":
        from lint_rules.commands import rules as command
    elif args.command == "explain":
        from lint_rules.commands import explain as command
    elif args.command == "server":
        from lint_rules.commands import server as command
    elif args.command == "run":
        from lint_rules.commands import run as command
    else:
        return None
    return command.run


if __name__ == "__main__":  # pragma: no cover
    run()
