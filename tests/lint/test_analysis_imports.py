"""lint_rules/analysis has no import cycle, counting imports anywhere in a module
(a function-level import dodges a cycle at run time but keeps the tangle)."""

from __future__ import annotations

from pathlib import Path

import lint_rules.analysis.scopes as _scopes
from tests.import_graph import find_cycle
from tests.import_graph import import_graph as _import_graph

PACKAGE = "lint_rules.analysis"
ANALYSIS_DIR = Path(_scopes.__file__).parent


def import_graph(directory: Path) -> dict[str, set[str]]:
    return _import_graph(directory, PACKAGE)


def test_analysis_package_has_no_import_cycle() -> None:
    graph = import_graph(ANALYSIS_DIR)
    assert {"scopes", "kinds", "training", "model"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in lint_rules/analysis: " + " -> ".join(cycle or [])


def test_the_cycle_check_sees_function_level_imports(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from lint_rules.analysis.b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from lint_rules.analysis import a\n")
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lint_rules.analysis.a import y\n")
    graph = import_graph(tmp_path)
    assert graph == {"a": {"b"}, "b": {"a"}, "c": set()}
    assert find_cycle(graph) == ["a", "b", "a"]
