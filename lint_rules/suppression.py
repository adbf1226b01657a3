"""``# noqa``, ``# noqa: TRN101``, ``# torchcheck: ignore[TRN101]`` and ``# torchcheck: skip-file``.

Comments are read with ``tokenize`` so a ``# noqa`` inside a string never counts.
This runs only for files that have findings (and for the cheap skip-file check).
"""

from __future__ import annotations

import io
import re
import tokenize

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*torchcheck:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_SKIP_FILE = re.compile(r"#\s*torchcheck:\s*skip-file\b", re.I)
_NEWLINE = re.compile(r"\r\n?|\n")
# Every directive names one of these: a file that never mentions them has none, and is not tokenized.
_MENTIONED = re.compile(r"noqa|torchcheck", re.I)

ALL = "*"


def _comments(source: str) -> list[tuple[int, str]]:
    out = []
    try:
        # newline=None: a lone \r ends a line, as it does for LibCST and the engine's positions.
        for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Fall back to a line scan for files tokenize rejects.
        for i, line in enumerate(_NEWLINE.split(source), 1):
            if "#" in line:
                out.append((i, line[line.index("#"):]))
    return out


def is_skip_file(source: str) -> bool:
    if "skip-file" not in source:
        return False
    return any(_SKIP_FILE.search(text) for _, text in _comments(source))


def suppressions(source: str) -> dict[int, set[str]]:
    """Line -> codes suppressed there (``ALL`` for a bare ``# noqa``)."""
    out: dict[int, set[str]] = {}
    if not _MENTIONED.search(source):
        return out
    for line, text in _comments(source):
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
    if not _MENTIONED.search(source):
        return out
    lines = _NEWLINE.split(source)  # not splitlines(): a form feed does not end a line
    for line, text in _comments(source):
        col = lines[line - 1].find(text) + 1 if line <= len(lines) and text in lines[line - 1] else 1
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
