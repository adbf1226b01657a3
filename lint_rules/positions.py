"""Line and column of nodes, as LibCST's PositionProvider gives them, for a fraction of its cost.

The same code generation PositionProvider runs, with its bookkeeping made cheap:
a fast path for tokens without newlines, and ranges kept as plain tuples keyed
by node id. The engine asks :func:`positions_of` for the nodes it reports, which
generates only the statements around them: a file's positions cost what its
findings need, not what the whole file takes. ``tests/lint/test_positions.py``
holds both to PositionProvider's exact results on real files and tricky ones; if
LibCST's internals ever change under it, the engine falls back to PositionProvider.
"""

from __future__ import annotations
import dataclasses
import re
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional
import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")


class _State(CodegenState):
    """Codegen that tracks line/column and records node ranges as tuples."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.ranges: dict[int, tuple[int, int, int, int]] = {}
        # The whole text each node generates (its parentheses and owned whitespace included):
        # what a fix that swaps a node for another replaces.
        self.extents: dict[int, tuple[int, int, int, int]] = {}
        self._stack: list[tuple[int, int]] = []

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        key = id(node)
        self.extents[key] = (start[0], start[1], self.line, self.column)
        if key not in self.ranges:
            self.ranges[key] = (start[0], start[1], self.line, self.column)

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> Iterator[None]:
        start = (self.line, self.column)
        try:
            yield
        finally:
            end = (self.line, self.column)
            if start_node is not None:
                start = self.ranges[id(start_node)][:2]
            if end_node is not None:
                end = self.ranges[id(end_node)][2:]
            self.ranges[id(node)] = (*start, *end)


def positions(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    """node id -> (start line, start column, end line, end column); lines 1-based, columns 0-based."""
    return positions_and_extents(module)[0]


def positions_and_extents(module: cst.Module) -> tuple[dict[int, tuple[int, int, int, int]],
                                                       dict[int, tuple[int, int, int, int]]]:
    """:func:`positions`, and each node's whole generated text as the same kind of range."""
    state = _State(module)
    module._codegen(state)
    return state.ranges, state.extents


_Range = tuple[int, int, int, int]


def positions_of(module: cst.Module, source: str, parents: dict[int, cst.CSTNode],
                 nodes: Iterable[cst.CSTNode]) -> tuple[dict[int, _Range], dict[int, _Range]]:
    """:func:`positions_and_extents` for ``nodes`` and what shares a statement with them: each node's
    smallest enclosing statement is generated alone and placed by finding its text in ``source``.

    ``source`` is the text ``module`` was parsed from (LibCST gives it back character for character),
    ``parents`` maps a node's id to its parent (nodes it lacks are looked for in the tree). A
    statement starts a line, so its place is exact once its text occurs at one line start only;
    if it occurs at several, the enclosing statement is tried, and a top-level statement is placed
    by the lengths of the statements before it. The result is the same ranges as for the whole
    module, for the nodes of the statements generated; a node outside every statement (the module,
    its header or footer comments) makes it the whole module's.
    """
    return _Locator(module, source, parents).run(nodes)


class _Locator:
    def __init__(self, module: cst.Module, source: str, parents: dict[int, cst.CSTNode]) -> None:
        self.module = module
        self.source = source
        self.parents = parents
        self.ranges: dict[int, _Range] = {}
        self.extents: dict[int, _Range] = {}
        self.top_index = {id(s): i for i, s in enumerate(module.body)}
        self.top_offset: dict[int, int] = {}  # top-level statement index -> offset of its text
        self.top_length: dict[int, int] = {}  # top-level statement index -> length of its text
        self.generated: set[int] = set()  # top-level statements whose every node has its range
        self.has_cr = "\r" in source
        self.line_mark = (0, 1)  # a line start and its line: lines are counted on from the nearest

    def run(self, nodes: Iterable[cst.CSTNode]) -> tuple[dict[int, _Range], dict[int, _Range]]:
        module = self.module
        chains: list[list[cst.CSTNode]] = []
        unknown: list[cst.CSTNode] = []
        for node in nodes:
            chain = self._ancestors(node)
            if chain is None:
                unknown.append(node)
            else:
                chains.append(chain)
        if unknown:
            # ``parents`` may lack a node a rule reports (a def's name): look for it among the
            # children of the nodes it has; what is deeper is found by generating statements below.
            lacked = self._lacked_children()
            for node in unknown:
                parent = lacked.get(id(node))
                chain = self._ancestors(parent) if parent is not None else None
                if chain is not None:
                    chains.append([node, *chain])
        if any(len(chain) == 1 for chain in chains):
            return positions_and_extents(module)  # the module itself
        for chain in chains:
            if id(chain[0]) not in self.ranges and not self._place(chain):
                return positions_and_extents(module)  # a header or footer line
        # What is still unplaced: the top-level statements not generated yet, in order, until one
        # holds it. At worst, the whole module's cost.
        body = module.body
        for node in unknown:
            if id(node) in self.ranges:
                continue
            for index in range(len(body)):
                if index not in self.generated and self._place([body[index], module]) and id(node) in self.ranges:
                    break
            else:  # in the header or the footer, or not in this tree at all (then it has no position)
                return positions_and_extents(module)
        return self.ranges, self.extents

    def _ancestors(self, node: cst.CSTNode) -> list[cst.CSTNode] | None:
        """``node`` and its ancestors up to the module, innermost first; None: ``parents`` lacks it."""
        parents = self.parents
        chain = [node]
        parent = parents.get(id(node))
        while parent is not None:
            chain.append(parent)
            parent = parents.get(id(parent))
        return chain if chain[-1] is self.module else None

    def _lacked_children(self) -> dict[int, cst.CSTNode]:
        """id -> parent for the children that ``parents`` lacks of the nodes it has."""
        parents = self.parents
        found: dict[int, cst.CSTNode] = {}
        seen: set[int] = set()
        for parent in parents.values():
            if id(parent) in seen:
                continue
            seen.add(id(parent))
            for name in _fields(type(parent)):
                value = getattr(parent, name)
                if type(value) is tuple:
                    for item in value:
                        if isinstance(item, cst.CSTNode) and id(item) not in parents:
                            found[id(item)] = parent
                elif isinstance(value, cst.CSTNode) and id(value) not in parents:
                    found[id(value)] = parent
        return found

    def _place(self, chain: list[cst.CSTNode]) -> bool:
        """Generate the smallest statement in ``chain`` (a node and its ancestors, innermost first)
        whose place is certain; False: the chain holds no statement (a header or footer line)."""
        module = self.module
        for k in range(len(chain) - 1):
            statement, parent = chain[k], chain[k + 1]
            if parent is module:
                if id(statement) not in self.top_index:
                    return False  # a header or footer line
            elif not (isinstance(parent, cst.IndentedBlock)
                      and isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))):
                continue
            indents = [module.default_indent if b.indent is None else b.indent
                       for b in reversed(chain[k + 1:]) if isinstance(b, cst.IndentedBlock)]
            state = _State(module)
            state.indent_tokens.extend(indents)
            statement._codegen(state)
            code = "".join(state.tokens)
            found = _line_starts(self.source, code, 0, len(self.source), 2)
            offset = found[0] if len(found) == 1 else None
            if parent is module:
                index = self.top_index[id(statement)]
                self.top_length[index] = len(code)
                self.generated.add(index)
                if offset is None:
                    offset = self._top_offset(index, code)
                self.top_offset[index] = offset
            if offset is None:
                continue  # the same text elsewhere too: try the enclosing statement
            delta = self._line_of(offset) - 1
            if delta:
                self.ranges.update({key: (a + delta, b, c + delta, d) for key, (a, b, c, d) in state.ranges.items()})
                self.extents.update({key: (a + delta, b, c + delta, d) for key, (a, b, c, d) in state.extents.items()})
            else:
                self.ranges.update(state.ranges)
                self.extents.update(state.extents)
            return True
        return False  # the module itself

    def _line_of(self, offset: int) -> int:
        """The 1-based line of ``offset`` (a line start), counting on from the last one asked for when
        it comes before: statements are placed mostly in document order, and counting from the start
        of the file for each would cost the file's length per statement."""
        mark, line = self.line_mark
        if offset < mark:
            mark, line = 0, 1
        line += _newlines(self.source, mark, offset, self.has_cr)
        self.line_mark = (offset, line)
        return line

    def _top_offset(self, index: int, code: str) -> int:
        """Where top-level statement ``index`` starts, whose text ``code`` starts several lines (or
        none: a last line without its newline): the one such line between the statements placed
        around it, if only one is; else measured from the nearest placed statement (or the start)
        by the lengths of the statements in between, generated to measure them."""
        placed = self.top_offset
        before = max((i for i in placed if i < index), default=None)
        after = min((i for i in placed if i > index), default=None)
        low = placed[before] + self._length(before) if before is not None else 0
        high = placed[after] - len(code) if after is not None else len(self.source)
        between = _line_starts(self.source, code, low, high, 2)
        if len(between) == 1:
            return between[0]
        if after is not None and (before is None or after - index < index - before):
            return placed[after] - sum(self._length(i) for i in range(index, after))
        if before is not None:
            return placed[before] + sum(self._length(i) for i in range(before, index))
        header = sum(len(self.module.code_for_node(line)) for line in self.module.header)
        return header + sum(self._length(i) for i in range(index))

    def _length(self, index: int) -> int:
        """The length of top-level statement ``index``'s text (kept: another placement may need it)."""
        length = self.top_length.get(index)
        if length is None:
            length = self.top_length[index] = len(self.module.code_for_node(self.module.body[index]))
        return length


def _line_starts(source: str, code: str, low: int, high: int, most: int) -> list[int]:
    """Up to ``most`` offsets in ``low..high`` where ``code`` occurs at the start of a line."""
    found: list[int] = []
    at = source.find(code, low, high + len(code))
    while at != -1:
        before = source[at - 1] if at else "\n"
        if before == "\n" or (before == "\r" and source[at:at + 1] != "\n"):
            found.append(at)
            if len(found) == most:
                break
        at = source.find(code, at + 1, high + len(code))
    return found


def _newlines(source: str, start: int, end: int, has_cr: bool) -> int:
    """Line ends in ``source[start:end]``, counted as LibCST does (a lone \\r ends one too); ``start``
    is a line start, so no \\r\\n pair straddles it."""
    if not has_cr:
        return source.count("\n", start, end)
    return len(_NEWLINE.findall(source, start, end))


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(tp: type) -> tuple[str, ...]:
    names = _FIELDS.get(tp)
    if names is None:
        names = _FIELDS[tp] = tuple(f.name for f in dataclasses.fields(tp))
    return names
