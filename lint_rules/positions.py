"""Line and column of nodes, 3-4x faster than LibCST's PositionProvider.

The same code generation PositionProvider runs, with its bookkeeping made cheap:
a fast path for tokens without newlines, and ranges kept as plain tuples keyed
by node id. ``tests/lint/test_positions.py`` holds it to PositionProvider's exact
results on real files; if LibCST's internals ever change under it, the engine
falls back to PositionProvider.
"""

from __future__ import annotations
import re
from contextlib import contextmanager
from typing import Iterator, Optional
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
