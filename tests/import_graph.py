"""A package's import graph, read from its source with ``ast``: for the tests that hold it cycle-free and keep
private names private.

Imports anywhere in a module count, function-level ones included (a function-level import dodges a cycle at
run time but keeps the tangle); imports under ``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    importer: str  # module names are relative to the package: "cli", "rules.trn101_x", "__init__" for its root
    target: str
    line: int
    name: str | None  # the name taken by ``from target import name`` (None: a module, or ``import target``)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def modules(directory: Path) -> dict[str, Path]:
    """Relative module name -> file, for every ``.py`` file under ``directory``."""
    found = {}
    for path in sorted(directory.rglob("*.py")):
        parts = path.relative_to(directory).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]  # a subpackage's __init__ is the subpackage
        found[".".join(parts)] = path
    return found


def imports(directory: Path, package: str) -> list[Import]:
    """Every import of one of the package's own modules, by one of its modules, outside TYPE_CHECKING blocks."""
    own = modules(directory)

    def full(rel: str) -> str:
        return package if rel == "__init__" else f"{package}.{rel}"

    by_full = {full(rel): rel for rel in own}
    found = []
    for rel, path in own.items():
        is_package = path.name == "__init__.py"
        here = full(rel).split(".") if is_package else full(rel).split(".")[:-1]  # the package `from .` means
        stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"), str(path))]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                stack.extend(node.orelse)
                continue
            stack.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    for end in range(len(parts), 0, -1):  # the deepest own module named
                        target = by_full.get(".".join(parts[:end]))
                        if target is not None:
                            found.append(Import(rel, target, node.lineno, None))
                            break
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - node.level + 1] if node.level <= len(here) else []
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    submodule = by_full.get(f"{module}.{alias.name}")
                    if submodule is not None:
                        found.append(Import(rel, submodule, node.lineno, None))
                    elif module in by_full:
                        found.append(Import(rel, by_full[module], node.lineno, alias.name))
    return sorted(found, key=lambda i: (i.importer, i.line, i.target))


def import_graph(directory: Path, package: str) -> dict[str, set[str]]:
    """Relative module name -> the package's modules it imports (itself excluded)."""
    graph: dict[str, set[str]] = {rel: set() for rel in modules(directory)}
    for imp in imports(directory, package):
        if imp.target != imp.importer:
            graph[imp.importer].add(imp.target)
    return graph


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


def private_imports(directory: Path, package: str) -> list[Import]:
    """Imports of a private name (``_x``, not a dunder) that another of the package's modules defines."""
    return [imp for imp in imports(directory, package)
            if imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__")
            and imp.target != imp.importer]
