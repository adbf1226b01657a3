"""``torchcheck lint --add-noqa``: end every line that has a finding with ``# noqa: CODE`` (merged into
a noqa comment already there), so a legacy codebase starts clean and only new code is held to the rules.
"""

from __future__ import annotations

import sys

from lint_rules import api, registry
from lint_rules.commands.lint_run import EXIT_ERROR, EXIT_OK, collect, prepare
from lint_rules.errors import FileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    from lint_rules.files import read_regular
    from lint_rules.fixes import add_noqa, write_atomic

    lint = prepare(args)
    collected = collect(lint)
    failed = collected.failed
    added = files = 0
    for r in collected.results:
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
            source, encoding = api.decode_source(read_regular(r.path), r.path)
            new, n, skipped = add_noqa(source, wanted)
            if n:
                write_atomic(r.path, new, encoding)
        except OSError as e:
            print(f"torchcheck: error: cannot add noqa comments to {r.path}: {e.strerror}", file=sys.stderr)
            failed = True
            continue
        except FileError as e:  # the file changed since it was linted
            print(f"torchcheck: error: {e}", file=sys.stderr)
            failed = True
            continue
        if skipped:
            print(f"torchcheck: warning: {r.path}: no comment can end line {', '.join(map(str, skipped))} (inside "
                  "a multi-line string or continued with a backslash); add a suppression there by hand",
                  file=sys.stderr)
        added += n
        files += bool(n)
    if not args.quiet:
        print(f"Added {added} noqa code{'' if added == 1 else 's'} to {files} file{'' if files == 1 else 's'}.")
    return EXIT_ERROR if failed else EXIT_OK
