"""Jupyter notebooks: lint the code cells of an ``.ipynb`` as one program.

Cells are joined in order (a training loop may span cells), IPython magics and
shell escapes (``%time``, ``!pip``, ``%%bash`` cells) are replaced so they
neither fail to parse nor shift line numbers (a line magic by ``pass`` at its own
indentation, so a block whose only statements are magics stays a block), and each finding is mapped back
to its cell and the line within it. Fixes are dropped: ``--fix`` does not edit notebooks.
"""

from __future__ import annotations

import json
import re
from lint_rules.records import replace

from lint_rules.diagnostics import Finding

# `%time f()`, `!pip install x`, `?obj`, `obj??`, and an assignment from one (`files = !ls`)
_MAGIC = re.compile(r"^\s*(%|!|\?)|^\s*\w[\w.]*\?\??\s*$|^\s*\w+(\s*,\s*\w+)*\s*,?\s*=\s*[%!]")


class NotebookError(ValueError):
    pass


def code_cells(text: str) -> list[tuple[int, str]]:
    """(cell number, source) of each code cell; cells are numbered from 1 in notebook order,
    markdown cells included, as they appear on screen."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {e.lineno}: {e.msg}") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no 'cells' list")
    out = []
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            out.append((number, "".join(src) if isinstance(src, list) else str(src)))
    return out


def cell_lines(lines: list[str], cell: int) -> list[str] | None:
    """The lines of code cell ``cell`` of the notebook whose JSON text is ``lines`` (as split by
    ``str.splitlines``), numbered as findings number them; None when there is no such cell or the
    notebook no longer parses.

    The lines are joined with newlines and read with ``strict=False``: a character ``splitlines``
    breaks at (U+2028 may stand unescaped in a JSON string) becomes a raw newline inside that
    string, which strict JSON refuses, and the cell splits at the same places either way."""
    try:
        nb = json.loads("\n".join(lines), strict=False)
    except ValueError:
        return None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not 1 <= cell <= len(cells) or not isinstance(cells[cell - 1], dict):
        return None
    src = cells[cell - 1].get("source", "")
    return ("".join(src) if isinstance(src, list) else str(src)).splitlines() or [""]


def to_source(cells: list[tuple[int, str]]) -> tuple[str, list[tuple[int, int]]]:
    """One Python program from the cells, and for each of its lines (cell number, line in cell)."""
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    for n, cell in cells:
        cell_lines = cell.splitlines() or [""]
        whole_cell_magic = cell_lines[0].lstrip().startswith("%%")
        for i, line in enumerate(cell_lines, start=1):
            if whole_cell_magic:
                lines.append("")
            elif _MAGIC.match(line):
                # `elif ready:` followed only by `%time run()` lines must keep a body
                lines.append(line[:len(line) - len(line.lstrip())] + "pass")
            else:
                lines.append(line)
            where.append((n, i))
        lines.append("")  # a cell boundary, so a cell never continues the previous one's statement
        where.append((n, len(cell_lines) + 1))
    return "\n".join(lines) + "\n", where


def map_back(findings: list[Finding], where: list[tuple[int, int]]) -> list[Finding]:
    out = []
    for f in findings:
        if 1 <= f.line <= len(where):
            cell, line = where[f.line - 1]
            end_cell, end_line = where[f.end_line - 1] if 1 <= f.end_line <= len(where) else (cell, line)
            out.append(replace(f, cell=cell, line=line, end_line=end_line if end_cell == cell else line,
                               fix=None))
        else:
            out.append(replace(f, fix=None))
    return out
