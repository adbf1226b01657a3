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
        from lint_rules import cache
        from lint_rules.runner import lint_file, load_settings, per_file_codes

        path = Path(self.path)
        cfg, codes = self.config.stash.setdefault(_SETTINGS, load_settings(Path(self.config.rootpath)))
        shown = _display(path, Path(self.config.rootpath))
        cache_dir = str(cfg.root / cache.DEFAULT_DIR)
        result = lint_file((str(path), shown, tuple(sorted(per_file_codes(path, codes, cfg))), cache_dir))
        if isinstance(result, str):
            raise LintFailure(result)
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


_SETTINGS = pytest.StashKey[tuple]()
