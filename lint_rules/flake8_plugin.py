"""flake8 plugin (entry point ``TRN``): ``flake8 --select TRN`` runs torchcheck's rules.

The file gets what ``torchcheck lint`` would give it: the nearest ``[tool.torchcheck]``
selection (preview tier and per-file ignores included) and the project's torch bound
(``pyproject.toml``, ``setup.cfg``, ``setup.py``, requirements files), which TRN701 and TRN802 depend on.
Positions and suppressions are the linter's own: the engine applies
``# torchcheck: ignore[...]`` and ``skip-file``, and flake8 applies ``# noqa``
with the same meaning (a bare ``# noqa`` or one naming the code).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from lint_rules import __version__
from lint_rules.errors import ConfigError, FileError


@lru_cache(maxsize=64)
def _settings(directory: str):
    """The settings for files in ``directory``: its nearest configuration, read once."""
    from lint_rules.api import Settings

    return Settings.resolve(directory)


class Flake8Plugin:
    name = "torchcheck"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.source = "".join(lines)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from lint_rules.api import lint_text

        path = Path(self.filename) if self.filename not in ("stdin", "-") else Path.cwd() / "stdin.py"
        try:
            settings = _settings(str(path.resolve().parent))
        except ConfigError as e:  # a bad [tool.torchcheck] is named on the file, not a flake8 traceback
            yield 1, 0, f"TRN001 torchcheck configuration error: {e}", type(self)
            return
        try:
            result = lint_text(self.source, self.filename if self.filename not in ("stdin", "-") else path, settings)
        except FileError as e:  # valid Python torchcheck cannot analyse: said on the file, not a traceback
            yield 1, 0, f"TRN001 torchcheck could not analyse this file: {e}", type(self)
            return
        for f in result.findings:
            # flake8 takes a 0-based column and prints it 1-based, as torchcheck does; the
            # severity is shown as `torchcheck lint` shows it.
            yield f.line, f.column - 1, f"{f.code} [{f.severity}] {f.message}", type(self)
