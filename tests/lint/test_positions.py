"""Our position tracking gives exactly LibCST PositionProvider's ranges."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from lint_rules.analysis.scopes import ScopeModel
from lint_rules import positions as positions_module
from lint_rules.positions import positions, positions_and_extents, positions_of

REPO = Path(__file__).resolve().parents[2]
SAMPLES = [p for p in sorted((REPO / "fixtures").rglob("*.py"))[:12] + sorted((REPO / "lint_rules").rglob("*.py"))
           if p.stat().st_size > 3000][:20]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_positions_match_position_provider(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions(module)
    assert len(expected) > 100
    for node, r in expected.items():
        assert got[id(node)] == (r.start.line, r.start.column, r.end.line, r.end.column), type(node).__name__


def test_crlf_and_multiline_strings():
    src = 'import torch\r\nx = """a\r\nb"""\r\ny = torch.zeros(1)\r\n'
    module = cst.parse_module(src)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions(module)
    assert all(got[id(n)] == (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in expected.items())


# ---------------------------------------------------------------- positions_of: one statement at a time

TRICKY = {
    "decorators and comments": '''\
#!/usr/bin/env python
# a header comment

"""Module docstring."""
import torch


# leading comment
@torch.no_grad()

# between decorators
@staticmethod  # trailing
# after the decorators
def f(x):  # on the def line
    # first in the body
    y = torch.zeros(1)
        # deeper than the body: the block's footer
    return y
# back at column 0: the next statement's
x = f(1)
''',
    "multi-line strings": '''\
import torch
s = """
x = torch.ones(1)
def g():
    return 1
"""
x = torch.ones(1)
def g():
    t = f"""{x}
    return 1
"""
    return 1
''',
    "crlf": 'import torch\r\n\r\nclass A:\r\n    """a\r\n    b"""\r\n    def m(self):\r\n'
            '        return torch.zeros(1)\r\n\r\n# end\r\n',
    "lone cr": "import torch\rx = 1\rdef f():\r    return torch.ones(1)\r",
    "semicolons": '''\
import torch; x = 1
def f():
    a = torch.zeros(1); b = a + 1; return b
if x: y = torch.ones(1); z = 2
''',
    "nested classes": '''\
import torch
def outer():
    class A:
        class B(torch.nn.Module):
            def forward(self, x):
                return x
        b = B()
    return A
class C:
  class D:
     def m(self):
         return torch.ones(1)
class E:
	def m(self):
		return torch.ones(1)
class F:
    @property
    # between
    @torch.no_grad()
    def p(self):
        x = 1
# at column 0, inside the body
        return torch.zeros(x)
''',
    "repeated statements": '''\
import torch
x = torch.zeros(1)
def f():
    x = torch.zeros(1)
    return x
x = torch.zeros(1)
def g():
    x = torch.zeros(1)
    return x
x = torch.zeros(1)
''',
    "no trailing newline": "import torch\nx = 1\ndef f():\n    return torch.ones(1)",
    "compound statements": '''\
import torch
try:
    import apex
except ImportError:  # no apex
    apex = None
else:
    pass
finally:
    pass
if apex:
    y = 1
elif torch.cuda.is_available():
    y = 2
else:
    y = \\
        3
with torch.no_grad(), \\
        torch.autocast("cpu"):
    for i in range(3):
        while i:
            i -= 1
match y:
    case 1:
        z = [
            1,  # one
            2,
        ]
    case _:
        pass
# a footer comment

''',
}


def _expected(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    provided = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {id(n): (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in provided.items()}


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Every child node, whitespace included (LibCST's ``children``, without its cost)."""
    found = []
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, cst.CSTNode):
                found.append(item)
    return found


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    nodes, stack = [], [module]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(_children(node))
    return nodes


def _statements(module: cst.Module) -> int:
    return sum(isinstance(n, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) for n in _all_nodes(module))


@pytest.mark.parametrize("name", list(TRICKY))
def test_positions_of_every_node_equal_position_provider(name):
    """For each node asked for alone: every node of the statements it generated has PositionProvider's
    range and the whole-module pass's extent, and a node inside a statement does not cost the module."""
    source = TRICKY[name]
    module = cst.parse_module(source)
    expected = _expected(module)
    _, full_extents = positions_and_extents(module)
    parents = ScopeModel(module).parents  # the engine's: it lacks some nodes (a def's name), found by search
    nodes = _all_nodes(module)
    assert any(id(n) not in parents for n in nodes[1:])
    generated_alone = 0
    for node in nodes:
        ranges, extents = positions_of(module, source, parents, [node])
        assert id(node) in ranges, type(node).__name__
        assert set(ranges) == set(extents)
        for key, got in ranges.items():
            assert got == expected[key], (type(node).__name__, got, expected[key])
            assert extents[key] == full_extents[key]
        generated_alone += len(ranges) < len(expected)
    assert generated_alone > len(nodes) // 2


def test_positions_of_places_repeated_text_exactly(monkeypatch):
    """A statement whose text starts several lines is placed by its enclosing statement, or (at the
    top level) by the lengths of the statements before it."""
    source = TRICKY["repeated statements"]
    module = cst.parse_module(source)
    expected = _expected(module)
    parents = ScopeModel(module).parents
    calls = [n for n in _all_nodes(module) if isinstance(n, cst.Call)]
    assert len(calls) == 5
    measured = []
    measure = positions_module._Locator._top_offset
    monkeypatch.setattr(positions_module._Locator, "_top_offset", lambda self, i, code: measured.append(i) or measure(self, i, code))
    for call in calls:
        ranges, _ = positions_of(module, source, parents, [call])
        assert ranges[id(call)] == expected[id(call)]
    assert sorted(set(measured)) == [1, 3, 5]  # the three `x = torch.zeros(1)` at the top level
    # Asked together, later ones reuse what earlier ones placed.
    ranges, _ = positions_of(module, source, parents, calls)
    assert [ranges[id(c)] for c in calls] == [expected[id(c)] for c in calls]


@pytest.mark.parametrize("name", ["crlf", "lone cr", "repeated statements", "compound statements"])
def test_positions_of_many_nodes_in_any_order(name):
    """Lines are counted on from the statement placed before (not from the top for each): asked
    together, backwards or interleaved, every node still gets PositionProvider's range."""
    source = TRICKY[name]
    module = cst.parse_module(source)
    expected = _expected(module)
    parents = ScopeModel(module).parents
    nodes = [n for n in _all_nodes(module) if isinstance(n, (cst.Name, cst.Call, cst.SimpleStatementLine))]
    assert len(nodes) > 5
    for order in (nodes[::-1], nodes[::2] + nodes[1::2], nodes[len(nodes) // 2:] + nodes[:len(nodes) // 2]):
        ranges, _ = positions_of(module, source, parents, order)
        assert [ranges[id(n)] for n in order] == [expected[id(n)] for n in order]


def test_positions_of_outside_statements_is_the_whole_module():
    source = TRICKY["decorators and comments"]
    module = cst.parse_module(source)
    ranges, extents = positions_of(module, source, ScopeModel(module).parents, [module.header[0]])
    assert (ranges, extents) == positions_and_extents(module)
    stranger = cst.Name("not_in_the_tree")  # no position, as with the whole module's
    ranges, _ = positions_of(module, source, ScopeModel(module).parents, [stranger])
    assert id(stranger) not in ranges and len(ranges) == len(positions_and_extents(module)[0])


@pytest.mark.parametrize("path", SAMPLES[:8], ids=lambda p: p.relative_to(REPO).as_posix())
def test_positions_of_on_real_files(path):
    source = path.read_text(encoding="utf-8")
    module = cst.parse_module(source)
    expected = _expected(module)
    parents = ScopeModel(module).parents
    nodes = _all_nodes(module)[::97]
    ranges, _ = positions_of(module, source, parents, nodes)
    assert all(ranges[id(n)] == expected[id(n)] for n in nodes)
    assert all(expected[key] == got for key, got in ranges.items())


def _findings(sources: list[str]) -> list[list]:
    from lint_rules import lint_source, registry

    codes = registry.default_codes(preview=True)
    return [[(f.line, f.column, f.end_line, f.end_column, f.code, f.fix) for f in lint_source(s, "x.py", codes).findings]
            for s in sources]


def test_findings_and_fixes_as_with_whole_module_positions(monkeypatch):
    """Every finding and fix of the fixtures and the rules' INVALID examples has the same positions
    as when the whole module's positions are computed."""
    import textwrap

    from lint_rules import engine, registry

    sources = [p.read_text(encoding="utf-8") for p in sorted((REPO / "fixtures").rglob("*.py"))]
    examples = [textwrap.dedent(ex.code) for rule in registry.active_rules().values() for ex in rule.INVALID]
    sources += examples
    # All in one file, twice: findings everywhere, in statements whose text occurs more than once.
    one_file = "".join(e.replace("from __future__ import annotations\n", "") for e in examples)
    sources.append(one_file + one_file)
    selective = _findings(sources)
    monkeypatch.setattr(engine, "positions_of", lambda module, source, parents, nodes: positions_and_extents(module))
    whole = _findings(sources)
    assert sum(map(len, whole)) > 100 and sum(f[5] is not None for fs in whole for f in fs) > 10
    assert selective == whole
