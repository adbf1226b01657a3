"""Findings and per-file results: plain data, importable without LibCST (a warm,
fully cached run never loads the parser)."""

from __future__ import annotations

from lint_rules.records import factory, record

ERROR = "error"
WARNING = "warning"

# Fix applicability, as Ruff names it: a safe fix keeps the code's meaning and is applied
# by --fix; an unsafe one may change behaviour and needs --unsafe-fixes as well.
SAFE = "safe"
UNSAFE = "unsafe"


CERTAIN = "certain"
POSSIBLE = "possible"


@record(frozen=True)
class Edit:
    """Replace the text from (line, column) up to (end_line, end_column) with ``content``.

    1-based lines and columns in Unicode code points, the end exclusive: the numbers
    findings use.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_dict(self) -> dict:
        return {"content": self.content, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column}


@record(frozen=True)
class Fix:
    """A fix for one finding: its edits are applied together or not at all."""

    applicability: str  # SAFE or UNSAFE
    message: str  # what it does, imperative
    edits: tuple[Edit, ...]

    def to_dict(self) -> dict:
        return {"applicability": self.applicability, "message": self.message,
                "edits": [e.to_dict() for e in self.edits]}

    @classmethod
    def from_dict(cls, data: dict) -> "Fix":
        return cls(data["applicability"], data["message"], tuple(Edit(**e) for e in data["edits"]))


@record(frozen=True)
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
    fix: Fix | None = None
    # CERTAIN: the evidence settles it (reported by default); POSSIBLE: reported with --preview
    # or when its rule is selected by code (see lint_rules.registry)
    confidence: str = "certain"

    @classmethod
    def from_dict(cls, data: dict) -> "Finding":
        """A finding from :meth:`to_dict`'s fields, or from a JSON report's object (its ``url`` and any
        key a later version adds are not fields)."""
        fix = data.get("fix")
        fields = cls.__record_fields__
        given = {k: v for k, v in data.items() if k in fields and k != "fix"}
        return cls(**given, fix=Fix.from_dict(fix) if fix else None)

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
            "fix": self.fix.to_dict() if self.fix is not None else None,
            "confidence": self.confidence,
        } | extra


@record(frozen=True)
class FileResult:
    """What linting one file gave. Built once by the layer that knows it (the engine, a notebook's
    mapping, the fix loop, the cache) and never changed after: a layer that adds to it makes a new
    one with ``records.replace``."""

    path: str
    findings: list[Finding] = factory(list)
    internal_error: bool = False
    skipped: bool = False  # never mentions torch, or skip-file
    notebook_fixes: int = 0  # fixes left out of a notebook's findings: --fix does not edit notebooks
    fixed: "FixedSource | None" = None  # fix runs only (never cached)
    error: str | None = None  # the file could not be read or decoded: why (and no findings)
    # What the findings depended on in other files of the project (imports resolved, summaries
    # read): ``api.dependencies_hold`` says whether it all still holds on disk.
    depends_on: list = factory(list)


@record(frozen=True)
class FixedSource:
    """What a fix run did to one file: its text before and after, and the fixes applied."""

    original: str
    source: str
    encoding: str
    applied: list[tuple[str, str]]  # (code, name) of each applied fix
    error: str | None = None  # a fix that broke the file: nothing was applied
    original_findings: list = factory(list)  # the findings of ``original``: what is left if it is not written
