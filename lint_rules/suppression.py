"""``# noqa``, ``# noqa: TRN101``, ``# torchcheck: ignore[TRN101]`` and ``# torchcheck: skip-file``.

Comments are found by a scan that skips string literals, so a ``# noqa`` inside a string never counts.
This runs only for files that have findings (and for the cheap skip-file check).
"""

from __future__ import annotations

import bisect
import functools
import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*torchcheck:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_SKIP_FILE = re.compile(r"#\s*torchcheck:\s*skip-file\b", re.I)
_NEWLINE = re.compile(r"\r\n?|\n")
# Every directive names one of these: a file that never mentions them has none, and is not scanned.
_MENTIONED = re.compile(r"noqa|torchcheck", re.I)
# What can matter to torchcheck: a noqa that is bare (no `: CODE` list right after it, so it hides
# every code), a TRN code, or a torchcheck comment. A file whose only directives are other tools'
# (`# noqa: F401`) has none of these and is not scanned.
# Searched in the lower-cased text: an IGNORECASE alternation is several times slower.
_RELEVANT = re.compile(r"noqa(?!:\s*[a-z]+[0-9]+)|trn[0-9]|torchcheck")

ALL = "*"


# One left-to-right scan of the source, in C: string literals (any prefix, raw or not, single or
# triple quoted, escapes included) are consumed whole, so a ``#`` inside one never starts a
# comment. Cheaper than ``tokenize`` by two orders of magnitude, and it never fails on a file that
# does not tokenize.
_STRING_OR_COMMENT = re.compile("|".join((
    r"(?P<comment>#[^\r\n]*)",
    r"'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''",  # triple quotes before single ones
    r'"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""',
    r"'[^'\\\r\n]*(?:\\[\s\S][^'\\\r\n]*)*'",
    r'"[^"\\\r\n]*(?:\\[\s\S][^"\\\r\n]*)*"',
)))


@functools.lru_cache(maxsize=4)  # the engine asks for the table and for the directives of one file
def _comments(source: str) -> tuple[tuple[int, int, str], ...]:
    """(line, 0-based column, text) of every comment that mentions noqa or torchcheck; none in a
    file whose directives are all other tools' code lists (they cannot affect torchcheck)."""
    out: list[tuple[int, int, str]] = []
    if not may_have_directives(source):
        return ()
    starts = None
    for m in _STRING_OR_COMMENT.finditer(source):
        text = m.group("comment")
        if text is None or not _MENTIONED.search(text):
            continue
        if starts is None:
            # Lines end at \r\n, \r or \n, as for LibCST and the engine's positions.
            starts = [0] + [n.end() for n in _NEWLINE.finditer(source)]
        i = bisect.bisect_right(starts, m.start()) - 1
        out.append((i + 1, m.start() - starts[i], text))
    return tuple(out)


def may_have_directives(source: str) -> bool:
    """False when no comment of ``source`` can be a torchcheck directive (a cheap text search)."""
    low = source.lower()
    if "noqa" not in low and "trn" not in low and "torchcheck" not in low:
        return False
    return _RELEVANT.search(low) is not None


def mentions_torch(text: str | bytes) -> bool:
    """The pre-filter: a file that never mentions torch is skipped unread, as one that says skip-file is.
    The API asks it once per file (of its bytes, before the cache); the engine's public
    ``lint_source`` asks it for its direct callers."""
    return (b"torch" if isinstance(text, bytes) else "torch") in text


def is_skip_file(source: str) -> bool:
    if "skip-file" not in source:
        return False
    return any(_SKIP_FILE.search(text) for _, _, text in _comments(source))


def suppressions(source: str) -> dict[int, set[str]]:
    """Line -> codes suppressed there (``ALL`` for a bare ``# noqa``)."""
    out: dict[int, set[str]] = {}
    for line, _, text in _comments(source):  # none in a file without directives: it is not scanned
        for m in _NOQA.finditer(text):
            codes = m.group("codes")
            if codes:
                out.setdefault(line, set()).update(c.upper() for c in re.split(r"[\s,]+", codes) if c)
            else:
                out.setdefault(line, set()).add(ALL)
        for m in _IGNORE.finditer(text):
            codes = m.group("codes")
            if codes is None or not codes.strip():
                out.setdefault(line, set()).add(ALL)
            else:
                out.setdefault(line, set()).update(
                    c.strip().upper() for c in re.split(r"[\s,]+", codes) if c.strip())
    return out


def directives(source: str) -> list[tuple[int, int, str, list[str] | None]]:
    """Every suppression comment: (line, 1-based column, "noqa" or "ignore", its codes or None if bare)."""
    out = []
    for line, col, text in _comments(source):
        col += 1
        for m in _NOQA.finditer(text):
            codes = m.group("codes")
            out.append((line, col + m.start(), "noqa",
                        [c.upper() for c in re.split(r"[\s,]+", codes) if c] if codes else None))
        for m in _IGNORE.finditer(text):
            codes = m.group("codes")
            parsed = [c.strip().upper() for c in re.split(r"[\s,]+", codes) if c.strip()] if codes else []
            out.append((line, col + m.start(), "ignore", parsed or None))
    return out


def is_suppressed(table: dict[int, set[str]], line: int, code: str) -> bool:
    codes = table.get(line)
    return bool(codes) and (ALL in codes or code in codes)
