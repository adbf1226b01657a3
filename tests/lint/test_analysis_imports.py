"""lint_rules/analysis has no import cycle, counting imports anywhere in a module
(a function-level import dodges a cycle at run time but keeps the tangle)."""

from __future__ import annotations

import ast
from pathlib import Path

import lint_rules.analysis.scopes as _scopes

PACKAGE = "lint_rules.analysis"
ANALYSIS_DIR = Path(_scopes.__file__).parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, own: set[str]) -> set[str]:
    """Analysis modules imported anywhere in ``tree``, except under ``if TYPE_CHECKING:``."""
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            if node.module == PACKAGE:
                found.update(a.name for a in node.names if a.name in own)
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module.split(".")[2])
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph(directory: Path) -> dict[str, set[str]]:
    own = {p.stem for p in directory.glob("*.py")}
    return {p.stem: _imports(ast.parse(p.read_text(encoding="utf-8")), own) & own
            for p in directory.glob("*.py")}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


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
