"""A baseline file: the findings a project has accepted for now, not reported again.

An entry is the file (relative to the baseline's directory), the code and the text of
the finding's line with its whitespace normalised; never the line number, so edits
above a finding do not revive it. Identical entries count: two accepted findings of
one code on two identical lines hide two, and a third is reported.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from lint_rules.diagnostics import Finding
from lint_rules.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

VERSION = 1
# Errors are never accepted: a file that does not parse or a crashed rule was not checked.
NEVER_BASELINED = ("TRN000", "TRN001")

Key = tuple  # (path relative to the baseline's directory, code, normalised line text)


def _relative(shown: str, base: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(shown), base)).as_posix()


def _normalised(text: str | None) -> str:
    return " ".join((text or "").split())


def keys(findings: list[Finding], base: Path, line_text: Callable[[Finding], str | None]) -> list[Key]:
    return [(_relative(f.path, base), f.code, _normalised(line_text(f))) for f in findings]


def write(path: Path, findings: list[Finding], line_text: Callable[[Finding], str | None]) -> int:
    """Record ``findings`` in ``path`` (replacing it); returns how many were recorded."""
    kept = [f for f in findings if f.code not in NEVER_BASELINED]
    base = path.resolve().parent
    entries = [{"path": p, "code": c, "line": f.line, "content": t}
               for f, (p, c, t) in zip(kept, keys(kept, base, line_text))]
    text = json.dumps({"version": VERSION, "tool": "torchcheck", "findings": entries}, indent=2) + "\n"
    from lint_rules.fixes import write_atomic

    try:
        if not path.exists():
            path.write_text("", encoding="utf-8")  # write_atomic replaces an existing file
        write_atomic(str(path), text, "utf-8")
    except OSError as e:
        raise UsageError(f"--baseline {str(path)!r}: cannot write: {e.strerror}") from None
    return len(entries)


def load(path: Path) -> Counter:
    """The accepted findings in ``path``, counted."""
    where = f"--baseline {str(path)!r}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file; create it with --write-baseline") from None
    except OSError as e:
        raise UsageError(f"{where}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"{where}: not a torchcheck baseline (invalid JSON: {e})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise UsageError(f"{where}: not a torchcheck baseline of version {VERSION}; write it again with "
                         "--write-baseline")
    entries = data.get("findings")
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("path", "code", "content"))
            for e in entries):
        raise UsageError(f"{where}: every entry of 'findings' needs string 'path', 'code' and 'content'")
    return Counter((e["path"], e["code"], _normalised(e["content"])) for e in entries)


def split(findings: list[Finding], accepted: Counter, base: Path,
          line_text: Callable[[Finding], str | None]) -> tuple[list[Finding], int, int]:
    """The findings the baseline does not accept, how many it hid, and how many of its entries
    matched nothing (fixed since, or their line changed)."""
    left = Counter(accepted)
    shown = []
    hidden = 0
    for f, k in zip(findings, keys(findings, base, line_text)):
        if left[k] > 0 and f.code not in NEVER_BASELINED:
            left[k] -= 1
            hidden += 1
        else:
            shown.append(f)
    return shown, hidden, sum(left.values())
