"""``torchcheck lint --show-files``: list the files a run would lint (after excludes and .gitignore),
one a line, and exit 0.
"""

from __future__ import annotations

from lint_rules import api
from lint_rules.commands.lint_run import EXIT_OK, prepare, print_notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    from lint_rules.files import display

    lint = prepare(args)
    notes: list[str] = []
    paths = api.files_of(lint.files, lint.settings, notes=notes)
    print_notes(notes)
    for path in paths:
        print(display(path))
    return EXIT_OK
