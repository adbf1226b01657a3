"""LibCST's parser, without LibCST's per-node validation.

Every LibCST node checks its own fields when it is constructed (``CSTNode.__post_init__`` calls
``_validate``), which is there for trees that code builds by hand; the parser's output is valid by
construction, and LibCST's own source says the check might better be skipped when parsing. Skipped,
a parse costs about 16% less (torch/nn: 1.24 s -> 1.04 s of CPU; ``benchmarks/lint_speed.py``).

Validation is off only while one of our parses runs, counted across threads, so nodes built at any
other time (a rule's fix, another library in the same process) are checked as usual. If LibCST no
longer has the hook, parsing is simply validated, as before.
"""

from __future__ import annotations

import threading

import libcst as cst

try:
    from libcst._nodes.base import CSTNode as _Node

    _VALIDATING = _Node.__dict__["__post_init__"]
except (ImportError, KeyError):  # a LibCST without the hook: parse as it always did
    _Node = None
    _VALIDATING = None

_lock = threading.Lock()
_active = 0


def _trusted(self: object) -> None:
    """``__post_init__`` during a parse: the parser built the node, nothing to check."""


def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module(source)``, unvalidated; raises what it raises."""
    if _Node is None:
        return cst.parse_module(source)
    global _active
    with _lock:
        _active += 1
        if _active == 1:
            _Node.__post_init__ = _trusted
    try:
        return cst.parse_module(source)
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _Node.__post_init__ = _VALIDATING
