"""``pytest --torchcheck-lint``: one lint item per collected Python file.

Like pytest-ruff and pytest-flake8, each ``.py`` file pytest visits gets an item
that fails with torchcheck's findings for it. The linter's configuration
(``[tool.torchcheck]``) and result cache apply, so unchanged files are not
parsed again. Imports the linter only (LibCST), never torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


class LintFailure(Exception):
    pass


class LintFile(pytest.File):
    def collect(self):
        yield LintItem.from_parent(self, name="torchcheck-lint")


class LintItem(pytest.Item):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("torchcheck_lint")

    def runtest(self) -> None:
        from lint_rules.api import Settings, lint_file

        if _SETTINGS not in self.config.stash:  # resolved once per session, from the rootdir's configuration
            self.config.stash[_SETTINGS] = Settings.resolve(Path(self.config.rootpath), cache=True)
        result = lint_file(self.path, self.config.stash[_SETTINGS],
                           shown=_display(Path(self.path), Path(self.config.rootpath)))
        if result.error is not None:
            raise LintFailure(f"torchcheck: error: {result.error}")
        if result.findings:
            raise LintFailure("\n".join(f"{f.location}: {f.code} {f.message}" for f in result.findings))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, LintFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"torchcheck-lint {self.path.name}"


def _display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


_SETTINGS = pytest.StashKey[object]()  # the lint_rules.api.Settings of the session
