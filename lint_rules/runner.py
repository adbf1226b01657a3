"""Lint one file's bytes or text: decode, lint, fix; notebooks; the project's torch bound.

Below :mod:`lint_rules.api`, which alone calls it: front ends use the API."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lint_rules import notebook, registry
from lint_rules.diagnostics import UNSAFE, FileResult, Finding, FixedSource
from lint_rules.errors import DecodeError
from lint_rules.files import undecodable
from lint_rules.limits import NULL_BYTE_MESSAGE, null_byte
from lint_rules.project import ProjectInfo, read_project


def decode(data: bytes) -> str:
    return decode_with_encoding(data)[0]


def decode_with_encoding(data: bytes) -> tuple[str, str]:
    if data.isascii() and b"coding" not in data:  # no coding comment, no BOM: UTF-8, which ASCII is
        return data.decode("ascii"), "utf-8"
    import tokenize  # here: a fully cached run decodes nothing
    from io import BytesIO

    encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    return data.decode(encoding), encoding


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
            return FileResult(shown, [_syntax_error(shown, 1, 1, str(e))])
        return None if "torch" in notebook.to_source(cells)[0] else FileResult(shown, skipped=True)
    if data.isascii() and b"\0" not in data and b"coding" not in data:  # decodes, no NUL: what decoding says
        return FileResult(shown, skipped=True)
    try:
        source = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:
        return FileResult(shown, error=undecodable(shown, data, e))
    if "torch" in source:  # an encoding that spells it in other bytes
        return None
    at = null_byte(source)
    if at is not None:
        return FileResult(shown, [_syntax_error(shown, *at, NULL_BYTE_MESSAGE)])
    return FileResult(shown, skipped=True)


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


def _syntax_error(shown: str, line: int, column: int, message: str) -> Finding:
    code = registry.SYNTAX_ERROR
    return Finding(shown, line, column, line, column, code.CODE, code.NAME, message, code.SEVERITY)


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


def fix_bytes(data: bytes, shown: str, codes: tuple[str, ...] | set[str], project: ProjectInfo,
              unsafe: bool, unfixable: tuple[str, ...] = (), facts=None) -> FileResult:
    """Lint and fix one Python file's bytes; the result is that of the fixed text."""
    try:
        source, encoding = decode_with_encoding(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return _lint_python(data, shown, tuple(codes), project, unfixable, facts)
    return fix_text(source, encoding, shown, codes, project, unsafe, unfixable, facts)


def fix_text(source: str, encoding: str, shown: str, codes, project: ProjectInfo, unsafe: bool,
             unfixable: tuple[str, ...] = (), facts=None) -> FileResult:
    from lint_rules.engine import lint_source
    from lint_rules.fixes import fix_until_stable

    fixed, applied, result, error = fix_until_stable(
        source, lambda text: lint_source(text, shown, codes, project, unfixable, facts), unsafe)
    if applied or error:
        result.fixed = FixedSource(source, fixed, encoding, [(f.code, f.name) for f in applied], error)
    return result


def lint_bytes(data: bytes, shown: str, codes: tuple[str, ...], project: ProjectInfo,
               unfixable: tuple[str, ...] = (), facts=None) -> FileResult:
    """Lint one file's bytes; ``facts`` (a ``ProjectFacts``) answers and records cross-file questions."""
    if shown.endswith(".ipynb"):
        return _lint_notebook(data, shown, codes, project, unfixable, facts)
    return _lint_python(data, shown, codes, project, unfixable, facts)


def _lint_notebook(data: bytes, shown: str, codes: tuple[str, ...], project: ProjectInfo,
                   unfixable: tuple[str, ...], facts=None) -> FileResult:
    try:
        text = data.decode("utf-8")  # JSON: always UTF-8
    except UnicodeDecodeError as e:
        raise DecodeError(undecodable(shown, data, e)) from None
    try:
        cells = notebook.code_cells(text)
    except notebook.NotebookError as e:
        return FileResult(shown, [_syntax_error(shown, 1, 1, str(e))])
    source, where = notebook.to_source(cells)
    from lint_rules.engine import lint_source  # LibCST loads only when a file is really linted

    result = lint_source(source, shown, codes, project, unfixable, facts)
    result.notebook_fixes = sum(f.fix is not None for f in result.findings)
    result.findings = notebook.map_back(result.findings, where)
    return result


def _lint_python(data: bytes, shown: str, codes: tuple[str, ...], project: ProjectInfo,
                 unfixable: tuple[str, ...] = (), facts=None) -> FileResult:
    try:
        source = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:
        raise DecodeError(undecodable(shown, data, e)) from None
    from lint_rules.engine import lint_source

    return lint_source(source, shown, codes, project, unfixable, facts)


@lru_cache(maxsize=None)
def project_for(directory: str) -> ProjectInfo:
    return read_project(Path(directory))
