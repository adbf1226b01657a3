"""Applying fixes: pick non-overlapping fixes, apply them, lint again until nothing is left
to fix; write files atomically; render unified diffs. No LibCST here: the engine builds
the edits, this module only splices text.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Callable

from lint_rules.diagnostics import SAFE, FileResult, Finding, Fix

# Lint, fix, lint again: a fix may uncover or unblock another (an overlapping one waits a
# pass). Every fix removes its finding, so a few passes reach the fixed point; the bound
# only stops a rule bug from looping forever.
MAX_PASSES = 10

_NEWLINE = re.compile(r"\r\n?|\n")


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability == SAFE or unsafe)


def _line_starts(source: str) -> list[int]:
    return [0] + [m.end() for m in _NEWLINE.finditer(source)]


def apply(source: str, findings: list[Finding], unsafe: bool) -> tuple[str, list[Finding]]:
    """Apply every applicable fix that overlaps no fix taken before it (in document order).

    Returns the new source and the findings whose fixes were applied. Overlapping fixes
    are left for the next pass, which re-lints the new text.
    """
    starts = _line_starts(source)

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col - 1

    taken: list[tuple[int, int]] = []
    splices: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    for f in sorted(findings, key=Finding.sort_key):
        if not applicable(f.fix, unsafe):
            continue
        spans = [(offset(e.line, e.column), offset(e.end_line, e.end_column), e.content) for e in f.fix.edits]
        if any(a < tb and ta < b or a == b == ta == tb for a, b, _ in spans for ta, tb in taken):
            continue
        if any(a < d and c < b for i, (a, b, _) in enumerate(spans) for c, d, _ in spans[i + 1:]):
            continue  # a malformed fix whose own edits overlap
        taken += [(a, b) for a, b, _ in spans]
        splices += spans
        applied.append(f)
    for a, b, content in sorted(splices, reverse=True):
        source = source[:a] + content + source[b:]
    return source, applied


def _parses(source: str) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():  # `x is 1` and the like: Python's warnings about the user's code
            warnings.simplefilter("ignore")
            compile(source, "<torchcheck fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def fix_until_stable(source: str, lint: Callable[[str], FileResult], unsafe: bool
                     ) -> tuple[str, list[Finding], FileResult, str | None]:
    """Lint and fix ``source`` until no applicable fix is left (at most MAX_PASSES passes).

    Returns the fixed source, the findings that were fixed, the result of linting the
    fixed source, and an error message if a pass would have broken the file (that pass
    is dropped and fixing stops) or fixing did not converge.
    """
    applied: list[Finding] = []
    result = lint(source)
    parsed_before = _parses(source)
    for _ in range(MAX_PASSES):
        new, done = apply(source, result.findings, unsafe)
        if not done:
            return source, applied, result, None
        if parsed_before and not _parses(new):
            codes = ", ".join(sorted({f.code for f in done}))
            return source, applied, result, f"a fix for {codes} produced invalid code; it was not applied " \
                                            "(please report this as a torchcheck bug)"
        source = new
        applied += done
        result = lint(source)
    if any(applicable(f.fix, unsafe) for f in result.findings):
        return source, applied, result, f"fixes did not settle after {MAX_PASSES} passes; run --fix again"
    return source, applied, result, None


def write_atomic(path: str, text: str, encoding: str) -> None:
    """Replace ``path``'s contents with ``text``: a temporary file in the same directory,
    flushed to disk, given the original's permission bits, then renamed over it. An
    interrupted run leaves the old file or the new one, never a truncated one."""
    import tempfile  # here: a run that writes nothing does not pay for it

    real = os.path.realpath(path)  # through a symlink, not replacing it
    mode = stat.S_IMODE(os.stat(real).st_mode)
    data = text.encode(encoding)
    directory, name = os.path.split(real)
    fd, tmp = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=".torchcheck-fix")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=path, tofile=path)
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


_NOQA_CODES = re.compile(r"(#\s*noqa:\s*)([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)


def add_noqa(source: str, codes_by_line: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """``--add-noqa``: end each line in ``codes_by_line`` with ``# noqa: CODES``, merged into a
    ``# noqa: ...`` comment already there, after any other comment.

    Returns the new source, the number of codes added, and the lines left alone because no
    comment can end them (inside a multi-line string, or continued with a backslash).
    """
    import io
    import tokenize

    commentable: set[int] = set()  # lines ended by a token after which a comment may follow
    comments: dict[int, tuple[int, str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                commentable.add(tok.start[0])
            elif tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = (tok.start[1], tok.string)
                commentable.add(tok.start[0])
            elif tok.type == tokenize.ENDMARKER:
                commentable.add(tok.start[0] - 1)  # a last line without a newline
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source, 0, sorted(codes_by_line)
    lines = source.splitlines(keepends=True)
    added = 0
    skipped = []
    for number, codes in sorted(codes_by_line.items()):
        if number not in commentable or not 1 <= number <= len(lines):
            skipped.append(number)
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        comment = comments.get(number)
        existing = _NOQA_CODES.search(comment[1]) if comment else None
        if existing is not None:
            have = [c for c in re.split(r"[\s,]+", existing.group(2)) if c]
            new = [c for c in sorted(codes) if c.upper() not in {h.upper() for h in have}]
            merged = existing.group(1) + ", ".join(have + new)
            start = comment[0]
            text = comment[1][:existing.start()] + merged + comment[1][existing.end():]
            body = body[:start] + text + body[start + len(comment[1]):]
        else:
            new = sorted(codes)
            body = f"{body.rstrip()}  # noqa: {', '.join(new)}" if body.strip() else body
        added += len(new)
        lines[number - 1] = body + ending
    return "".join(lines), added, skipped
