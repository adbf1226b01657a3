"""Parse once, run every enabled rule in one pass, collect, position, suppress, sort.

The engine never reads argv and never prints.
"""

from __future__ import annotations

import ast
import bisect
import collections
import functools
import gc
import re
import traceback
from lint_rules.records import replace
from typing import Iterable, Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from lint_rules import limits, registry, suppression
from lint_rules.analysis.context import test_file
from lint_rules.analysis.cross_file import ProjectFacts
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.project_index import index_for
from lint_rules.analysis.parsing import parse_module
from lint_rules.positions import positions_of
from lint_rules.project import ProjectInfo
from lint_rules.diagnostics import CERTAIN, POSSIBLE, Edit, FileResult, Finding, Fix
from lint_rules.rule import Report, Rule, RuleFix


def _builtin_finding(path: str, code: registry.BuiltinCode, line: int, col: int, message: str) -> Finding:
    return Finding(path, line, col, line, col, code.CODE, code.NAME, message, code.SEVERITY)


def lint_source(source: str, path: str, codes: Iterable[str] | None = None,
                project: ProjectInfo | None = None, unfixable: Iterable[str] = (),
                facts: ProjectFacts | None = None, possible: Iterable[str] | None = None) -> FileResult:
    """Lint one file's text with the rules in ``codes`` (default: the default tier, as ``torchcheck
    lint`` runs with no selection; pass ``registry.default_codes(preview=True)`` for every rule).

    ``project`` carries facts about the project the file belongs to (the torch
    versions it supports), for the few rules whose verdict depends on them.
    Findings of the ``unfixable`` codes carry no fix (the ``unfixable`` setting).
    ``facts`` answers cross-file questions (what a class imported from another
    file of the project returns); by default the file's imports are resolved from
    the files on disk around ``path`` (a buffer or standard input included), and
    ``facts.deps`` afterwards says what the findings depended on. ``possible`` names the codes whose
    possible findings (not only the certain ones) are reported: by default none when ``codes`` is None
    (the default tier), every code of ``codes`` otherwise (a rule selected by code reports everything).

    A text that never mentions torch is skipped unread. :mod:`lint_rules.api` asks that
    question itself, once, before it reads the cache; it calls :func:`lint_prefiltered`.
    """
    if not suppression.mentions_torch(source):
        return FileResult(path, skipped=True)
    return lint_prefiltered(source, path, codes, project, unfixable, facts, possible)


def lint_prefiltered(source: str, path: str, codes: Iterable[str] | None = None,
                     project: ProjectInfo | None = None, unfixable: Iterable[str] = (),
                     facts: ProjectFacts | None = None, possible: Iterable[str] | None = None) -> FileResult:
    """:func:`lint_source` for a text that has passed :func:`mentions_torch` already."""
    if facts is None:
        facts = ProjectFacts(index_for(None), path)
    # A LibCST tree is hundreds of thousands of objects; the cyclic collector would
    # rescan them over and over while the tree is built (a third of the parse time)
    # though nothing in it needs it. Collection resumes, as before, between files.
    enabled = gc.isenabled()
    gc.disable()
    try:
        if possible is None:
            possible = () if codes is None else codes
        result = _lint_source(source, path, codes, project, frozenset(unfixable), facts, frozenset(possible))
    finally:
        if enabled:
            gc.enable()
    # What the findings depended on in other files: the cache and an editor check it still holds.
    return replace(result, depends_on=facts.deps) if facts.deps else result


def _lint_source(source: str, path: str, codes: Iterable[str] | None, project: ProjectInfo | None,
                 unfixable: frozenset[str], facts: ProjectFacts, possible: frozenset[str]) -> FileResult:
    # No selection means what the CLI runs with none: preview rules stay off (see registry.PREVIEW_RULES).
    codes = set(codes) if codes is not None else registry.default_codes()
    nul = limits.null_byte(source)
    if nul is not None:  # CPython's error, where it is (LibCST's parser fails on it at 1:1)
        return FileResult(path, [_builtin_finding(path, registry.SYNTAX_ERROR, *nul, limits.NULL_BYTE_MESSAGE)])
    if suppression.is_skip_file(source):
        return FileResult(path, skipped=True)
    rejected = limits.check_depth(source, path)  # raises limits.TooDeep; LibCST would crash on it
    if rejected is not None:
        return FileResult(path, [_builtin_finding(path, registry.SYNTAX_ERROR, rejected.lineno or 1,
                                                  max(rejected.offset or 1, 1), f"SyntaxError: {rejected.msg}")])
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as e:
        # Valid Python that LibCST cannot read is torchcheck's limit, not the user's syntax error.
        limits.check_parser_limit(source, path, e.message.split(": expected one of")[0].removeprefix("parser error: "))
        line, col, msg = _syntax_error_position(source, e)
        return FileResult(path, [_builtin_finding(path, registry.SYNTAX_ERROR, line, col, msg)])
    except (RecursionError, ValueError, MemoryError) as e:
        limits.check_parser_limit(source, path, f"{type(e).__name__}: {e}")
        return FileResult(path, [_builtin_finding(path, registry.SYNTAX_ERROR, 1, 1,
                                                  f"could not parse: {type(e).__name__}: {e}")])
    rejected = limits.check_target(source, path)
    if rejected is not None:
        return FileResult(path, [_builtin_finding(path, registry.SYNTAX_ERROR, rejected.lineno or 1,
                                                  max(rejected.offset or 1, 1), f"SyntaxError: {rejected.msg}")])

    rule_classes = registry.active_rules()
    enabled = [rule_classes[c] for c in sorted(codes) if c in rule_classes]
    # A rule whose trigger words the file never mentions cannot report here (Rule.REQUIRES).
    selected = _applicable(enabled, source, facts)
    model = FileModel(module, _interesting(selected))
    model.project = project or ProjectInfo()
    model.project_facts = facts
    # Per-file facts are cached on the model itself (model.fact), so nothing of the file's tree
    # outlives it (issue #17: a module-level table of facts once kept every tree alive), and the
    # model is emptied when the file is done, so the tree is freed at once (see FileModel.dispose).
    try:
        return _run_rules(source, path, codes, unfixable, module, model, selected,
                          rule_classes, {rc.CODE for rc in enabled}, possible)
    finally:
        model.dispose()


def _applicable(enabled: list[type[Rule]], source: str, facts=None) -> tuple[type[Rule], ...]:
    """The rules that can report in ``source`` (``Rule.applies_to``), each trigger word searched
    for once although several rules share it. A rule whose words the file lacks still runs when
    another file of the project passes this file's functions a module of a class with one of its
    words in the name (``nn.CrossEntropyLoss()`` given to ``train(..., criterion)``)."""
    seen: dict[str, bool] = {}
    passed: str | None = None
    out = []
    for rc in enabled:
        if rc.applies_to(source, seen):
            out.append(rc)
        elif facts is not None and rc.REQUIRES:
            if passed is None:
                passed = " ".join(sorted(facts.passed_classes()))
            if passed and rc.applies_to(passed):
                out.append(rc)
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _interesting(selected: tuple[type[Rule], ...]) -> frozenset[type]:
    """The node types the walk must collect for these rules."""
    interesting: set[type] = set()
    for rc in selected:
        interesting.update(rc.visited_types())
        interesting.update(rc.NEEDS)
    return frozenset(interesting)


def _run_rules(source: str, path: str, codes: set[str] | None, unfixable: frozenset[str],
               module: cst.Module, model: FileModel, selected: tuple[type[Rule], ...],
               rule_classes: dict[str, type[Rule]], enabled: set[str], possible: frozenset[str]) -> FileResult:
    rules: list[Rule] = [rc(model) for rc in selected]

    dispatch: dict[type, list[tuple[Rule, object]]] = {}
    for rule in rules:
        for tp, attr in type(rule).visited_types().items():
            dispatch.setdefault(tp, []).append((rule, getattr(rule, attr)))
    crashed: dict[str, str] = {}
    for node in model.ordered:
        handlers = dispatch.get(type(node))
        if not handlers:
            continue
        for rule, method in handlers:
            if rule.CODE in crashed:
                continue
            try:
                method(node)
            except Exception as e:  # one rule must never hide the others
                crashed[rule.CODE] = _crash_text(e)
    for rule in rules:
        if rule.CODE in crashed:
            continue
        try:
            rule.finish()
        except Exception as e:
            crashed[rule.CODE] = _crash_text(e)

    # A finding's confidence: the rule's word, else its tier's (a preview rule's findings are possible).
    # Possible findings are kept only for the codes that ask for them (--preview, or selected by code).
    # In test code (context.test_file) nothing is certain: a test exercises a pattern on purpose,
    # on data small enough that what it costs does not matter.
    tests = any(rule.reports for rule in rules) and test_file(model)
    reports: list[tuple[Rule, Report, bool]] = [
        (rule, rep, certain) for rule in rules if rule.CODE not in crashed for rep in rule.reports
        if (certain := (rep.certain if rep.certain is not None else not registry.is_preview(rule.CODE))
            and not tests)
        or rule.CODE in possible]
    crashes = [_builtin_finding(path, registry.INTERNAL_ERROR, 1, 1,
                                f"rule {code} ({rule_classes[code].NAME}) crashed: {text}")
               for code, text in sorted(crashed.items())]
    check_suppressions = codes is not None and registry.UNUSED_SUPPRESSION.CODE in codes \
        and suppression.may_have_directives(source)
    if not reports and not check_suppressions:
        return FileResult(path, crashes, internal_error=bool(crashes))

    # Positions cost more than the parse; compute them only for files with findings.
    raw: list[Finding] = []
    if reports:
        wanted = [rep.node for _, rep, _ in reports] + [
            e.node for _, rep, _ in reports if rep.fix is not None for e in rep.fix.edits]
        ranges, extents = _positions(module, source, _parents_for(model, wanted), wanted)
        offsets = _Offsets(source) if extents is not None and any(rep.fix for _, rep, _ in reports) else None
        for rule, rep, certain in reports:
            line, col, end_line, end_col = ranges(rep.node)
            fix = None
            if rep.fix is not None and offsets is not None:
                fix = _fix(rule, rep.fix, module, offsets, extents)
            raw.append(Finding(path, line, col + 1, end_line, end_col + 1,
                               rule.CODE, rule.NAME, rep.message, rep.severity or rule.SEVERITY, fix=fix,
                               confidence=CERTAIN if certain else POSSIBLE))
    if check_suppressions:
        raw += _suppression_findings(path, source, raw, enabled)
    table = suppression.suppressions(source)
    unused = registry.UNUSED_SUPPRESSION.CODE
    kept = crashes + [
        f for f in raw
        # A bare noqa comment must not hide the report that it suppresses nothing; naming TRN002 does.
        if not (suppression.is_suppressed(table, f.line, f.code) if f.code != unused
                else unused in table.get(f.line, ()))]
    # A fix never edits a line that carries a torchcheck suppression: the comment's author decided.
    # Nor does a fix the project declared unfixable.
    findings = sorted((f if f.fix is None or not (f.code in unfixable or _touches_suppressed(f.fix, table))
                       else replace(f, fix=None) for f in kept), key=Finding.sort_key)
    return FileResult(path, findings, internal_error=bool(crashes))


class _Offsets:
    """Line/column <-> offset in a source, counting lines as LibCST does."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i]


_NEWLINE = re.compile(r"\r\n?|\n")


def _fix(rule: Rule, fix: RuleFix, module: cst.Module, offsets: _Offsets, extents: dict) -> Fix | None:
    """The rule's node replacements as text edits, each trimmed to the characters that change."""
    src = offsets.source
    edits = []
    for rep in fix.edits:
        extent = extents.get(id(rep.node))
        if extent is None:
            return None
        start, end = offsets.offset(extent[0], extent[1]), offsets.offset(extent[2], extent[3])
        old = src[start:end]
        new = rep.new if isinstance(rep.new, str) else module.code_for_node(rep.new)
        if new == old:
            continue
        head = 0
        while head < min(len(old), len(new)) and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        # Whole words only: `False` -> `True`, not `Fals` -> `Tru`.
        while head and _word(old, head - 1) and (_word(old, head) or _word(new, head)):
            head -= 1
        while tail and _word(old, len(old) - tail) and (_word(old, len(old) - tail - 1)
                                                        or _word(new, len(new) - tail - 1)):
            tail -= 1
        a, b = offsets.position(start + head), offsets.position(end - tail)
        edits.append(Edit(a[0], a[1] + 1, b[0], b[1] + 1, new[head:len(new) - tail]))
    if not edits:
        return None
    return Fix(fix.applicability, fix.message or rule.FIX_TITLE or rule.MESSAGE, tuple(edits))


def _word(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


def _touches_suppressed(fix: Fix, table: dict[int, set[str]]) -> bool:
    for e in fix.edits:
        for line in range(e.line, e.end_line + 1):
            codes = table.get(line, ())
            if suppression.ALL in codes or any(c.startswith("TRN") for c in codes):
                return True
    return False


_TRN_CODE = re.compile(r"^TRN\d{3}$")


def _suppression_findings(path: str, source: str, found: list[Finding], enabled: set[str]) -> list[Finding]:
    """TRN002: suppression comments that suppress nothing, and unknown torchcheck codes in them."""
    code = registry.UNUSED_SUPPRESSION
    on_line: dict[int, set[str]] = {}
    for f in found:
        on_line.setdefault(f.line, set()).add(f.code)
    known = set(registry.known_codes())
    out = []

    def add(line: int, col: int, message: str) -> None:
        out.append(Finding(path, line, col, line, col, code.CODE, code.NAME, message, code.SEVERITY))

    for line, col, kind, listed in suppression.directives(source):
        if listed is None:
            if kind == "ignore" and not on_line.get(line):
                add(line, col, "`# torchcheck: ignore` suppresses nothing on this line")
            continue  # a bare noqa comment may serve another linter
        for c in listed:
            if not c.startswith("TRN"):
                continue  # another tool's code
            if not _TRN_CODE.match(c) or c not in known:
                add(line, col, f"Unknown torchcheck code {c} in a suppression comment{registry.suggestion(c)}")
            elif c in enabled and c not in on_line.get(line, ()):
                add(line, col, f"Unused suppression: no {c} finding on this line")
    return out


def _parents_for(model: FileModel, nodes: list[cst.CSTNode]) -> Mapping[int, cst.CSTNode]:
    """The model's parent links, plus those of def and class names (the walk skips them: they
    are not variable references) when a rule reported one, so that positions need not search
    the whole tree for it."""
    parents = model.parents
    if all(id(n) in parents for n in nodes):
        return parents
    names = {id(d.name): d for tp in (cst.FunctionDef, cst.ClassDef) for d in model.nodes(tp)}
    return collections.ChainMap(parents, names)


def _positions(module: cst.Module, source: str, parents: Mapping, nodes: list):
    """A function node -> (line, column, end line, end column), 1-based lines, 0-based columns,
    and node id -> the extent of its whole text (None on the fallback path: then no fixes), for
    ``nodes`` (what was reported and what fixes replace): only their statements are generated."""
    try:
        fast, extents = positions_of(module, source, parents, nodes)
        return (lambda node: fast[id(node)]), extents
    except Exception:  # LibCST internals changed: the public, slower provider
        slow = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

        def lookup(node: cst.CSTNode) -> tuple[int, int, int, int]:
            r = slow[node]
            return r.start.line, r.start.column, r.end.line, r.end.column

        return lookup, None


def _syntax_error_position(source: str, error: cst.ParserSyntaxError) -> tuple[int, int, str]:
    """Line, 1-based column and message of a parse failure.

    CPython's parser pinpoints errors better than LibCST's (which often points at
    the next line), so ask it first; fall back to LibCST for syntax CPython accepts.
    """
    try:
        compile(source, "<torchcheck>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as e:
        if e.lineno:
            return e.lineno, max(e.offset or 1, 1), f"SyntaxError: {e.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    return error.raw_line, error.raw_column + 1, f"SyntaxError: {error.message}"


def _crash_text(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__}: {e}{where}"
