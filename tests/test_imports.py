"""Neither package has an import cycle, and no module imports another's private name.

The plugin's sub-plugins share ``pytest_torchcheck.core`` and never import each other or the entry point;
a helper one module keeps private (``_devices``) is made public where it is shared.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_graph import find_cycle, import_graph, imports, private_imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pytest_torchcheck", "lint_rules")


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_no_import_cycle(package: str) -> None:
    graph = import_graph(ROOT / package, package)
    assert len(graph) > 20  # the walk found the package
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in {package}: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_a_private_name_of_another(package: str) -> None:
    found = [f"{package}/{i.importer.replace('.', '/')}.py:{i.line} imports {i.name} from {i.target}"
             for i in private_imports(ROOT / package, package)]
    assert found == []


def test_plugin_parts_import_the_core_and_not_each_other() -> None:
    plugins = {"plugin", "distributed.plugin", "budgets.plugin", "watch.plugin"}
    graph = import_graph(ROOT / "pytest_torchcheck", "pytest_torchcheck")
    for name in plugins:
        assert "core" in graph[name], name
    # Transitively too: a sub-plugin's helper module importing the entry point is the same tangle.
    for name in plugins:
        seen, todo = set(), [name]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        assert not (plugins - {name}) & seen, f"{name} reaches {sorted((plugins - {name}) & seen)}"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_walk_finds_a_planted_cycle_through_function_level_and_relative_imports(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "core.py": "import os\n",
        "sub/__init__.py": "from pkg.sub.b import thing\n",
        "sub/a.py": "from .. import core\n\ndef f():\n    from pkg.sub import b\n",
        "sub/b.py": "import pkg.sub.c as c\n",
        "sub/c.py": "from . import a\n",
        "typed.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.sub.a import f\n",
    })
    graph = import_graph(root, "pkg")
    assert graph == {"__init__": set(), "core": set(), "sub": {"sub.b"}, "sub.a": {"core", "sub.b"},
                     "sub.b": {"sub.c"}, "sub.c": {"sub.a"}, "typed": set()}
    assert find_cycle(graph) == ["sub.b", "sub.c", "sub.a", "sub.b"]
    (root / "sub" / "a.py").write_text("from .. import core\n")  # the function-level import was the cycle
    assert find_cycle(import_graph(root, "pkg")) is None


def test_the_walk_finds_a_planted_private_import(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "plugin.py": "def _devices(): ...\n",
        "sub/plugin.py": "def g():\n    from pkg.plugin import _devices, __doc__\n",
        "own.py": "from pkg.own import _self\n_self = 1\n",
        "mods.py": "from pkg import _private_module\n",
        "_private_module.py": "",
    })
    assert [(i.importer, i.target, i.name, i.line) for i in private_imports(root, "pkg")] == [
        ("sub.plugin", "plugin", "_devices", 2)]
    assert {(i.importer, i.target) for i in imports(root, "pkg")} >= {("mods", "_private_module")}
