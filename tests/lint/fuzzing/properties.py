"""What every linted file must keep, however odd: checked in-process on one source at a time.

- no internal error (TRN001) and no exception out of the engine;
- no hang: each lint finishes within ``LINT_SECONDS`` (a normal file takes 10-100 ms);
- every finding and every fix edit lies inside the file;
- fixes (unsafe ones too): the fixed file parses if the original did, fixing settles, a second
  fix changes nothing, a line carrying a torchcheck suppression is never edited, and a fix
  removes the finding it was made for (no finding of the same code at the same place after it).
"""

from __future__ import annotations

import collections
import re
import signal
import warnings
from contextlib import contextmanager
from typing import Iterator

from lint_rules import registry, suppression
from lint_rules.diagnostics import FileResult, Finding
from lint_rules.engine import lint_source
from lint_rules.fixes import MAX_PASSES, applicable, apply
from lint_rules.project import ProjectInfo
from lint_rules.runner import FileContext, lint_decoded

# Generous: the machine may be shared, and a mutant can be twice the size of its fixture.
LINT_SECONDS = 20
PATH = "fuzzed.py"
CODES = frozenset(registry.expand(["ALL"], "ALL"))  # every rule, and TRN002 for the suppression path
_NEWLINE = re.compile(r"\r\n?|\n")


class Hang(BaseException):
    """Raised by the time limit; a BaseException so that the engine's per-rule guard does not
    turn it into TRN001."""


class PropertyFailed(AssertionError):
    pass


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    def expired(signum, frame):
        raise Hang(f"{what} took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def lint(source: str) -> FileResult:
    with time_limit(LINT_SECONDS, "linting one file"):
        return lint_source(source, PATH, CODES, ProjectInfo())


def parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, PATH, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def lines_of(source: str) -> list[str]:
    """Lines as the engine and LibCST count them (\\n, \\r\\n and \\r end a line)."""
    return _NEWLINE.split(source)


def check_lint(source: str) -> FileResult:
    """Lint ``source`` with every rule; fail on an internal error or a position outside the file."""
    result = lint(source)
    crashes = [f.message for f in result.findings if f.code == registry.INTERNAL_ERROR.CODE]
    if crashes or result.internal_error:
        raise PropertyFailed("internal error: " + "; ".join(crashes))
    check_positions(source, result.findings)
    return result


def _inside(lines: list[str], line: int, column: int) -> bool:
    return 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]) + 1


def check_positions(source: str, findings: list[Finding]) -> None:
    lines = lines_of(source)
    for f in findings:
        spans = [(f.line, f.column, f.end_line, f.end_column, "finding")]
        if f.fix is not None:
            spans += [(e.line, e.column, e.end_line, e.end_column, "fix edit") for e in f.fix.edits]
        for line, col, end_line, end_col, what in spans:
            if not (_inside(lines, line, col) and _inside(lines, end_line, end_col)
                    and (line, col) <= (end_line, end_col)):
                raise PropertyFailed(
                    f"{f.code} {what} at {line}:{col}-{end_line}:{end_col} lies outside the file "
                    f"({len(lines)} lines; line {line} has "
                    f"{len(lines[line - 1]) if 1 <= line <= len(lines) else '-'} characters)")


def _protected(source: str) -> collections.Counter:
    """The text of every line a fix must leave alone: a bare noqa, or one naming a torchcheck code."""
    lines = lines_of(source)
    return collections.Counter(
        lines[line - 1] for line, codes in suppression.suppressions(source).items()
        if line <= len(lines) and (suppression.ALL in codes or any(c.startswith("TRN") for c in codes)))


def _offset(starts: list[int], line: int, column: int) -> int:
    return starts[line - 1] + column - 1


def _starts(source: str) -> list[int]:
    return [0] + [m.end() for m in _NEWLINE.finditer(source)]


def _mapped(source: str, fixed_findings: list[Finding], finding: Finding) -> int:
    """The offset of ``finding``'s start after the edits of ``fixed_findings`` (a start an edit
    replaces maps to the edit's start)."""
    starts = _starts(source)
    at = _offset(starts, finding.line, finding.column)
    start, shift = at, 0
    for f in fixed_findings:
        for e in f.fix.edits:
            a, b = _offset(starts, e.line, e.column), _offset(starts, e.end_line, e.end_column)
            if b <= at:
                shift += len(e.content) - (b - a)
            elif a <= at:
                start = a
    return start + shift


def _position(source: str, offset: int) -> tuple[int, int]:
    starts = _starts(source)
    line = max(i for i, s in enumerate(starts) if s <= offset)
    return line + 1, offset - starts[line] + 1


def check_fixes(source: str) -> str:
    """Fix ``source`` pass by pass as ``--fix --unsafe-fixes`` does, checking each pass; then
    check the CLI's own fix path agrees and that fixing its output changes nothing.

    Returns the fixed source.
    """
    result = check_lint(source)
    original = source
    parsed = parses(source)
    passes = 0
    while True:
        new, done = apply(source, result.findings, unsafe=True)
        if not done:
            break
        passes += 1
        if passes > MAX_PASSES:
            raise PropertyFailed(f"fixes did not settle after {MAX_PASSES} passes: "
                                 f"{sorted({f.code for f in done})} still fixable")
        codes = sorted({f.code for f in done})
        if parsed and not parses(new):
            raise PropertyFailed(f"pass {passes}: the fixes for {codes} made the file unparseable")
        before, after = _protected(source), collections.Counter(lines_of(new))
        touched = [line for line, n in before.items() if after[line] < n]
        if touched:
            raise PropertyFailed(f"pass {passes}: a fix for {codes} edited a suppressed line: {touched[0]!r}")
        again = check_lint(new)
        left = {(f.code, f.line, f.column) for f in again.findings}
        for f in done:
            line, col = _position(new, _mapped(source, done, f))
            if (f.code, line, col) in left:
                raise PropertyFailed(f"pass {passes}: the fix for {f.code} at {f.line}:{f.column} "
                                     f"({f.fix.message}) left {f.code} at {line}:{col}")
        source, result = new, again
    if not passes:
        return source  # nothing to fix: the CLI's fix path would lint once and stop
    fixing = FileContext(PATH, tuple(sorted(CODES)), ProjectInfo(), fix="unsafe")
    cli = lint_decoded(original, "utf-8", fixing)
    if cli.fixed is not None and cli.fixed.error:
        raise PropertyFailed(f"--fix reported: {cli.fixed.error}")
    cli_source = cli.fixed.source if cli.fixed is not None else original
    if cli_source != source:
        raise PropertyFailed("--fix and the pass-by-pass fix disagree")
    second = lint_decoded(source, "utf-8", fixing)
    if second.fixed is not None and second.fixed.source != source:
        raise PropertyFailed(f"a second --fix changed the file again ({second.fixed.applied})")
    if any(applicable(f.fix, True) for f in second.findings):
        raise PropertyFailed("fixable findings remain after --fix")
    return source
