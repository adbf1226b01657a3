"""Findings and per-file results: plain data, importable without LibCST (a warm,
fully cached run never loads the parser)."""

from __future__ import annotations

from dataclasses import dataclass, field

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One diagnostic. Lines and columns are 1-based; the end column is exclusive."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    severity: str
    cell: int | None = None  # notebooks: the code cell (from 1); line and end_line are within it

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def location(self) -> str:
        """``path:line:column``, or ``path:cell N:line:column`` in a notebook (as Ruff prints it)."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    def to_dict(self) -> dict:
        extra = {"cell": self.cell} if self.cell is not None else {}
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
        } | extra



@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    internal_error: bool = False
    skipped: bool = False  # never mentions torch, or skip-file
