"""flake8 plugin (entry point ``TRN``): ``flake8 --select TRN`` runs torchcheck's rules.

Positions and suppressions are the linter's own: the engine applies
``# torchcheck: ignore[...]`` and ``skip-file``, and flake8 applies ``# noqa``
with the same meaning (a bare ``# noqa`` or one naming the code).
"""

from __future__ import annotations

import ast
from typing import Iterator

from lint_rules import __version__
from lint_rules.engine import lint_source


class Flake8Plugin:
    name = "torchcheck"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.source = "".join(lines)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        result = lint_source(self.source, self.filename)
        for f in result.findings:
            # flake8 takes a 0-based column and prints it 1-based, as torchcheck does.
            yield f.line, f.column - 1, f"{f.code} {f.message}", type(self)
