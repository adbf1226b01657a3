"""The Rule base class, findings, and the examples each rule carries."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

from lint_rules.diagnostics import ERROR, SAFE, UNSAFE, WARNING, Finding  # noqa: F401  (re-exported)

# Marks the line(s) an INVALID example must be reported on.
BUG_MARKER = "# BUG"


@dataclass(frozen=True)
class Valid:
    code: str


@dataclass(frozen=True)
class Invalid:
    """An example the rule must flag: on every line marked ``# BUG``, and nowhere else.

    ``fixed``: the example after ``--fix --unsafe-fixes`` (``None``: no fix is offered);
    ``applicability``: what every fix offered for it must declare.
    """

    code: str
    fixed: str | None = None
    applicability: str | None = None

    @property
    def expected_lines(self) -> list[int]:
        src = textwrap.dedent(self.code)
        return [i for i, line in enumerate(src.splitlines(), 1) if BUG_MARKER in line]


@dataclass(frozen=True)
class Replace:
    """Swap ``node`` (its whole text, parentheses included) for ``new``: a node or source text."""

    node: cst.CSTNode
    new: cst.CSTNode | str


@dataclass(frozen=True)
class RuleFix:
    """A fix a rule offers with a finding: all its replacements, applied together."""

    applicability: str  # SAFE or UNSAFE
    edits: tuple[Replace, ...]
    message: str | None = None  # default: the rule's FIX_TITLE


@dataclass
class Report:
    node: cst.CSTNode
    message: str
    severity: str | None = None  # overrides the rule's SEVERITY for this finding
    fix: RuleFix | None = None
    # True: the evidence makes the finding certain (reported by default); False: only possible
    # (reported with --preview or when the rule is selected by its code); None: the rule's tier decides.
    certain: bool | None = None


class Rule:
    """Base class. Subclasses define ``visit_<NodeType>(self, node)`` methods.

    The engine calls every visit method of every enabled rule during one pass
    over the nodes of the file in document order, then ``finish()``. Rules ask
    the shared :class:`FileModel` (``self.model``) for names, kinds, loops and
    grad mode instead of keeping their own context stacks.
    """

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]
    FIX_TITLE: ClassVar[str | None] = None
    SEVERITY: ClassVar[str] = ERROR
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []
    # Extra node types the rule reads with ``model.nodes(tp)`` without visiting them.
    NEEDS: ClassVar[tuple[type, ...]] = ()
    # Rules that are listed but never run (a retired code stays registered).
    REMOVED: ClassVar[bool] = False
    # Words of which every finding's file contains at least one (e.g. ``("zero_grad", ".grad")``):
    # a file with none of them cannot have a finding, and the rule does not run on it (as Ruff
    # skips rules whose trigger is absent). Empty: the rule runs on every file. Checked against
    # every VALID/INVALID example and fixture by tests/lint/test_rule_gating.py.
    REQUIRES: ClassVar[tuple[str, ...]] = ()

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self.reports: list[Report] = []
        self._reported: set[int] = set()

    def report(self, node: cst.CSTNode, message: str | None = None, severity: str | None = None,
               fix: RuleFix | None = None, certain: bool | None = None) -> None:
        """Report ``node``. ``certain`` is this finding's confidence: by default a finding of a
        preview rule is possible and any other certain (see :mod:`lint_rules.registry`)."""
        if id(node) in self._reported:
            return
        self._reported.add(id(node))
        self.reports.append(Report(node, message or self.MESSAGE, severity, fix, certain))

    def finish(self) -> None:
        """Called after every node was visited; override for whole-file checks."""

    @classmethod
    def applies_to(cls, source: str, seen: dict[str, bool] | None = None) -> bool:
        """Whether the rule can have a finding in ``source`` (see ``REQUIRES``). ``seen`` remembers
        which words ``source`` holds, so that rules sharing a word search for it once."""
        if not cls.REQUIRES:
            return True
        seen = {} if seen is None else seen
        for word in cls.REQUIRES:
            found = seen.get(word)
            if found is None:
                found = seen[word] = word in source
            if found:
                return True
        return False

    @classmethod
    def summary(cls) -> str:
        return cls.MESSAGE

    @classmethod
    def documentation(cls) -> str:
        return textwrap.dedent(cls.__doc__ or "").strip()

    @classmethod
    def visited_types(cls) -> dict[type, str]:
        """Node type -> visit method name, from the class's ``visit_<Type>`` methods."""
        cached = cls.__dict__.get("_visited_types")
        if cached is None:
            cached = {}
            for attr in dir(cls):
                if attr.startswith("visit_"):
                    tp = getattr(cst, attr[len("visit_"):], None)
                    if isinstance(tp, type) and issubclass(tp, cst.CSTNode):
                        cached[tp] = attr
            cls._visited_types = cached
        return cached
