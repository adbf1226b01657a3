"""torchcheck's static linter: rules that catch silent PyTorch training bugs."""

from __future__ import annotations

__version__ = "0.1.0"

from lint_rules.engine import FileResult, lint_source  # noqa: E402
from lint_rules.rule import Finding  # noqa: E402

__all__ = ["FileResult", "Finding", "lint_source", "__version__"]
