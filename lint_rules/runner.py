"""Lint one file's bytes or text: decode, lint, fix; notebooks; the project's torch bound.

Below :mod:`lint_rules.api`, which alone calls it: front ends use the API. The API resolves a
:class:`FileContext` once per file (its codes, torch bound, fix mode) and hands it down here.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lint_rules import notebook, registry
from lint_rules.diagnostics import UNSAFE, FileResult, Finding, FixedSource
from lint_rules.errors import DecodeError
from lint_rules.files import undecodable
from lint_rules.limits import NULL_BYTE_MESSAGE, null_byte
from lint_rules.project import ProjectInfo, read_project
from lint_rules.records import record, replace


@record(frozen=True)
class FileContext:
    """Everything besides its text that decides one file's result, resolved once by the API."""

    shown: str  # the path in findings
    codes: tuple  # the codes that apply to this file (per-file ignores applied), sorted
    project: ProjectInfo  # the torch bound
    unfixable: tuple = ()  # codes whose findings carry no fix
    fix: str | None = None  # None: report only; "safe" or "unsafe": the fixes to apply (never to notebooks)
    possible: tuple | None = None  # codes whose possible findings are reported (None: all of ``codes``)


def decode(data: bytes) -> str:
    return decode_with_encoding(data)[0]


def decode_with_encoding(data: bytes) -> tuple[str, str]:
    if data.isascii() and b"coding" not in data:  # no coding comment, no BOM: UTF-8, which ASCII is
        return data.decode("ascii"), "utf-8"
    import tokenize  # here: a fully cached run decodes nothing
    from io import BytesIO

    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    except SyntaxError as e:
        # A codec that is not installed: `# -*- coding: future_fstrings -*-` names a package that
        # registers a codec at start-up (older research code). Its source is UTF-8, so read it as that;
        # bytes that are not UTF-8 keep the error, which names the cookie.
        if not str(e.msg).startswith("unknown encoding"):
            raise
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise e from None
        return text.removeprefix("\ufeff"), "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    return data.decode(encoding), encoding


def screen_text(source: str, shown: str) -> FileResult | None:
    """:func:`screen` for a text already decoded (an editor buffer, ``api.lint_text``)."""
    if "torch" in source:
        return None
    at = null_byte(source)
    if at is not None:
        return FileResult(shown, [syntax_error(shown, *at, NULL_BYTE_MESSAGE)])
    return FileResult(shown, skipped=True)


def screen(data: bytes, shown: str) -> FileResult | None:
    """The result of a file that needs no linting, from its bytes alone; None when it must be linted.

    A file that never mentions torch is skipped without parsing, but only once its bytes are known to be
    source: undecodable bytes (random bytes, UTF-16 without a coding comment) are its error, a NUL byte is
    a syntax error (``TRN000`` where it is), and a notebook must be a notebook, as for a file that does
    mention torch. ASCII without a NUL or a coding comment is all three at a glance (no decoding)."""
    if b"torch" in data:
        return None
    if shown.endswith(".ipynb"):
        try:
            cells = notebook.code_cells(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            return FileResult(shown, error=undecodable(shown, data, e))
        except notebook.NotebookError as e:
            return FileResult(shown, [syntax_error(shown, 1, 1, str(e))])
        return None if "torch" in notebook.to_source(cells)[0] else FileResult(shown, skipped=True)
    if data.isascii() and b"\0" not in data and b"coding" not in data:  # decodes, no NUL: what decoding says
        return FileResult(shown, skipped=True)
    try:
        source = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:
        return FileResult(shown, error=undecodable(shown, data, e))
    return screen_text(source, shown)  # an encoding may spell "torch" in other bytes


def skips(data: bytes, shown: str) -> bool:
    """Whether linting the file with these bytes stops before parsing (it never mentions torch, or says
    ``# torchcheck: skip-file``): decided from the bytes, so that no cache entry can say so of a file
    that is linted."""
    from lint_rules.suppression import is_skip_file

    try:
        if shown.endswith(".ipynb"):
            source = notebook.to_source(notebook.code_cells(data.decode("utf-8")))[0]
        else:
            source = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError, notebook.NotebookError):
        return False  # an error, never a skip
    return "torch" not in source or is_skip_file(source)


def syntax_error(shown: str, line: int, column: int, message: str) -> Finding:
    """A ``TRN000`` finding at ``line``:``column`` of the file shown as ``shown``."""
    code = registry.SYNTAX_ERROR
    return Finding(shown, line, column, line, column, code.CODE, code.NAME, message, code.SEVERITY)


def decode_source(data: bytes, shown: str) -> tuple[str, str]:
    """The text of a Python file's bytes and its encoding; :class:`DecodeError` saying why not."""
    try:
        return decode_with_encoding(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:
        raise DecodeError(undecodable(shown, data, e)) from None


def has_fixes(result: FileResult, mode: str | None) -> bool:
    """Whether a fix run (``mode``: "safe" or "unsafe") would apply anything to ``result``'s file."""
    if mode is None:
        return False
    from lint_rules.fixes import applicable

    return any(applicable(f.fix, mode == UNSAFE) for f in result.findings)


def still_valid(cache_dir: str):
    """The check that a cached result's cross-file dependencies still hold (loads no parser)."""
    def valid(deps: list) -> bool:
        from lint_rules.analysis.project_index import index_for

        return index_for(cache_dir).still_valid(deps)

    return valid


def lint_bytes(data: bytes, context: FileContext, facts=None) -> FileResult:
    """Lint (in a fix run: fix) one file's bytes, which mention torch; ``facts`` (a ``ProjectFacts``)
    answers and records cross-file questions. Raises :class:`DecodeError`."""
    if context.shown.endswith(".ipynb"):
        return _lint_notebook(data, context, facts)
    source, encoding = decode_source(data, context.shown)
    return lint_decoded(source, encoding, context, facts)


def lint_decoded(source: str, encoding: str, context: FileContext, facts=None) -> FileResult:
    """Lint (in a fix run: fix) one Python file's text, which mentions torch. In a fix run the result
    is that of the fixed text, and ``result.fixed`` says what was done."""
    from lint_rules.engine import lint_prefiltered  # LibCST loads only when a file is really linted

    passes: list[FileResult] = []

    def lint(text: str) -> FileResult:
        passes.append(lint_prefiltered(text, context.shown, context.codes, context.project, context.unfixable,
                                       facts, context.possible))
        return passes[-1]

    if context.fix is None:
        return lint(source)
    from lint_rules.fixes import fix_until_stable

    fixed, applied, result, error = fix_until_stable(source, lint, context.fix == UNSAFE)
    if applied or error:
        return replace(result, fixed=FixedSource(source, fixed, encoding, [(f.code, f.name) for f in applied],
                                                 error, passes[0].findings))
    return result


def _lint_notebook(data: bytes, context: FileContext, facts=None) -> FileResult:
    shown = context.shown
    try:
        text = data.decode("utf-8")  # JSON: always UTF-8
    except UnicodeDecodeError as e:
        raise DecodeError(undecodable(shown, data, e)) from None
    try:
        cells = notebook.code_cells(text)
    except notebook.NotebookError as e:
        return FileResult(shown, [syntax_error(shown, 1, 1, str(e))])
    source, where = notebook.to_source(cells)
    from lint_rules.engine import lint_source

    # The pre-filter again, on what the cells say: the notebook's JSON may mention torch only in
    # markdown or outputs.
    result = lint_source(source, shown, context.codes, context.project, context.unfixable, facts,
                         context.possible)
    return replace(result, notebook_fixes=sum(f.fix is not None for f in result.findings),
                   findings=notebook.map_back(result.findings, where))


@lru_cache(maxsize=None)
def project_for(directory: str) -> ProjectInfo:
    return read_project(Path(directory))
