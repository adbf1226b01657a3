"""torchcheck's static linter: rules that catch silent PyTorch training bugs.

The public names load on first use, so that ``torchcheck`` can answer a fully
cached run without importing LibCST.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS = {"FileResult": "lint_rules.diagnostics", "Finding": "lint_rules.diagnostics",
            "lint_source": "lint_rules.engine", "Settings": "lint_rules.api", "lint_text": "lint_rules.api",
            "lint_file": "lint_rules.api", "lint_paths": "lint_rules.api"}
__all__ = ["FileResult", "Finding", "Settings", "lint_file", "lint_paths", "lint_source", "lint_text", "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lint_rules' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
