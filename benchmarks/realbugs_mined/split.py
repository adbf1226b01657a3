"""The tune/check split of the mined real-bug benchmark (issue #22), by repository.

A repository's half is a hash of its lowercase ``owner/name`` with a fixed salt, taken mod 2: it
depends on nothing but the name, so it was fixed before any candidate was mined or triaged and
cannot drift with the cases found. Every case of one repository falls in the same half, so the
check half holds projects the rules were never tuned on, not just other commits of them.

Tune only on the ``tune`` half; run the ``check`` half for its numbers, never to read its cases.
NEVER change SALT or the hash: that would move repositories between halves after triage.

    python benchmarks/realbugs_mined/split.py owner/name [owner/name ...]
"""

from __future__ import annotations

import hashlib
import sys

SALT = b"torchcheck-issue-22-realbugs-mined-v1"
HALVES = ("tune", "check")


def half(repository: str) -> str:
    """``tune`` or ``check`` for a GitHub ``owner/name`` (case does not matter, as on GitHub)."""
    owner, sep, name = repository.strip().partition("/")
    if not sep or not owner or not name or "/" in name:
        raise ValueError(f"repository {repository!r} is not of the form owner/name")
    digest = hashlib.blake2b(repository.strip().lower().encode("utf-8"), key=SALT, digest_size=8).digest()
    return HALVES[int.from_bytes(digest, "big") % 2]


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    if not names:
        print("usage: split.py owner/name [owner/name ...]", file=sys.stderr)
        return 2
    try:
        for name in names:
            print(f"{half(name)}\t{name}")
    except ValueError as e:
        print(f"split.py: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
