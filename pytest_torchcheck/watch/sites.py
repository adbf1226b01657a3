"""Where in the user's program a watched call was made: the innermost frame outside torch,
torchcheck and the standard library, with the position of the call expression it was running.

A finding of ``torchcheck run`` names the user's statement (``optimizer.step()`` in ``train.py``),
never ``torch/optim/optimizer.py``: a stack walk from the hook's frame skips every frame of a
library. Frames of other installed packages (site-packages) are skipped too while a frame of the
user's own code is further out: a loop driven by a framework is reported at the user's code that
called the framework's method, not inside the framework.
"""

from __future__ import annotations

import itertools
import os
import sys
import sysconfig

import lint_rules
import pytest_torchcheck
from lint_rules.records import record

# torchcheck's own packages: the watcher's wrappers and the ``run`` command are never the user's code.
_OWN = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (pytest_torchcheck, lint_rules))
_STDLIB = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_THIRD_PARTY = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)

LIBRARY, THIRD_PARTY, USER = 0, 1, 2


@record(frozen=True)
class Site:
    """A position in a file: 1-based lines and columns, the end column exclusive (a Finding's numbers)."""

    path: str  # absolute
    line: int
    column: int
    end_line: int
    end_column: int

    def shown(self) -> str:
        return f"{display_path(self.path)}:{self.line}"


def display_path(path: str, start: str | None = None) -> str:
    """``path`` relative to ``start`` (default: the working directory) when it is under it, as the linter
    shows paths."""
    try:
        rel = os.path.relpath(path, start)
    except ValueError:  # another drive
        return path
    return path if rel.startswith(os.pardir) else rel


class Sites:
    """Classifies the files of the stack once each, and finds the user's frame of a call."""

    def __init__(self) -> None:
        import torch  # a watch is about to patch it: its files are a library's, whoever imports it first

        torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        self._library = (*_OWN, torch_dir)
        self._kinds: dict[str, int] = {}
        self.cwd = os.getcwd()  # findings are shown relative to where the program started, whatever it chdirs to

    def kind(self, filename: str) -> int:
        kind = self._kinds.get(filename)
        if kind is None:
            kind = self._kinds[filename] = self._classify(filename)
        return kind

    def _classify(self, filename: str) -> int:
        if filename.startswith("<"):  # <frozen runpy>, <string>: nothing the user can open
            return LIBRARY if filename.startswith("<frozen") else USER
        path = os.path.abspath(filename)
        if path.startswith(self._library):
            return LIBRARY
        if any(part in path for part in _THIRD_PARTY):
            return THIRD_PARTY
        if path.startswith(_STDLIB):
            return LIBRARY
        return USER

    def current(self, depth: int = 1, constructing: object = None) -> Site | None:
        """The user's frame among the callers of the caller ``depth`` frames up; None if there is none.

        ``constructing``: an object whose ``__init__`` chain is running; the user's own ``__init__`` of
        its class (a custom optimizer's ``super().__init__``) is skipped, so the site is the line that
        built the object.
        """
        frame = sys._getframe(depth + 1)
        fallback = None
        while frame is not None:
            kind = self.kind(frame.f_code.co_filename)
            if constructing is not None and frame.f_code.co_name == "__init__" and \
                    frame.f_locals.get("self") is constructing:
                kind = LIBRARY
            if kind == USER:
                return _site(frame)
            if kind == THIRD_PARTY and fallback is None:
                fallback = frame
            frame = frame.f_back
        return _site(fallback) if fallback is not None else None


def _site(frame) -> Site:
    code = frame.f_code
    line, end_line, col, end_col = frame.f_lineno, None, None, None
    positions = getattr(code, "co_positions", None)  # Python 3.11: the span of the running instruction
    if positions is not None and frame.f_lasti >= 0:
        line2, end_line, col, end_col = next(itertools.islice(positions(), frame.f_lasti // 2, None),
                                             (None, None, None, None))
        if line2 is not None:
            line = line2
    if col is None:
        col, end_line, end_col = _statement_start(code.co_filename, line), line, None
    path = os.path.abspath(code.co_filename)
    return Site(path, line, col + 1, end_line or line, (end_col + 1) if end_col is not None else col + 2)


def _statement_start(filename: str, line: int) -> int:
    import linecache

    text = linecache.getline(filename, line)
    return len(text) - len(text.lstrip()) if text.strip() else 0
