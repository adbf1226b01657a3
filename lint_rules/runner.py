"""Lint one file on disk: read, cache, decode, lint. Used by the CLI (also in worker
processes) and by the pytest plugin's ``--torchcheck-lint`` items."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lint_rules import cache, notebook, registry
from lint_rules.config import Config, find_pyproject, load
from lint_rules.diagnostics import UNSAFE, FileResult, Finding, FixedSource
from lint_rules.errors import DecodeError, FileError
from lint_rules.files import matches, undecodable
from lint_rules.project import ProjectInfo, read_project


def configured_codes(cfg: Config, select: list[str] | None = None) -> set[str]:
    """The configuration's selection (``select`` from the command line replaces it)."""
    preview = cfg.preview  # off: ALL and prefixes leave the preview rules out
    if select:
        codes = registry.expand(select, "--select", preview)
    else:
        where = f"[tool.torchcheck] in {cfg.path}" if cfg.path else "the defaults"
        codes = registry.expand(cfg.select, where, preview) if cfg.select is not None \
            else registry.default_codes(preview)
        codes |= registry.expand(cfg.extend_select, where, preview)
    return codes - registry.expand(cfg.ignore, f"[tool.torchcheck] ignore in {cfg.path}")


def load_settings(start: Path) -> tuple[Config, set[str]]:
    """The nearest ``[tool.torchcheck]`` configuration at or above ``start``, and its selection."""
    found = find_pyproject(start)
    cfg = load(found) if found is not None else Config()
    return cfg, configured_codes(cfg)


def per_file_codes(path: Path, codes: set[str], cfg: Config) -> set[str]:
    out = codes
    for pattern, ignored in cfg.per_file_ignores.items():
        if matches(path, [pattern], cfg.root):
            out = out - registry.expand(ignored, "per-file-ignores")
    return out


def decode(data: bytes) -> str:
    return decode_with_encoding(data)[0]


def decode_with_encoding(data: bytes) -> tuple[str, str]:
    import tokenize  # here: a fully cached run decodes nothing
    from io import BytesIO

    encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    return data.decode(encoding), encoding


# (path, shown path, codes, cache directory or None[, fix mode: None, "safe" or "unsafe"[, unfixable codes]])
Job = tuple


def _fix_mode(job: Job) -> str | None:
    return job[4] if len(job) > 4 else None


def _unfixable(job: Job) -> tuple[str, ...]:
    return tuple(job[5]) if len(job) > 5 else ()


def _has_fixes(result: FileResult, mode: str | None) -> bool:
    if mode is None:
        return False
    from lint_rules.fixes import applicable

    return any(applicable(f.fix, mode == UNSAFE) for f in result.findings)


def cached_result(job: Job) -> FileResult | None:
    """The result of ``job`` if it needs no linting: cached (and, in a fix run, with nothing
    to fix), or a file that never mentions torch."""
    path, shown, codes, cache_dir = job[:4]
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None  # lint_file reports it
    if b"torch" not in data:
        return FileResult(shown, skipped=True)
    if cache_dir is None:
        return None
    hit = cache.load(cache_dir, cache.key(data, shown, codes, project_for(str(Path(path).parent)), _unfixable(job)),
                     _still_valid(cache_dir))
    return None if hit is not None and _has_fixes(hit, _fix_mode(job)) else hit


def _still_valid(cache_dir: str):
    """The check that a cached result's cross-file dependencies still hold (loads no parser)."""
    def valid(deps: list) -> bool:
        from lint_rules.analysis.project_index import index_for

        return index_for(cache_dir).still_valid(deps)

    return valid


def _facts(path: str, cache_dir: str | None):
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import index_for

    return ProjectFacts(index_for(cache_dir), path)


def lint_file(job: Job) -> FileResult | str:
    """Lint one file (runs in a worker process); a file that cannot be read, decoded or parsed
    comes back as its message.

    In a fix run the result carries the fixed text (``result.fixed``); writing it is the caller's.
    """
    try:
        return _lint_file(job)
    except FileError as e:
        return f"torchcheck: error: {e}"


def _lint_file(job: Job) -> FileResult | str:
    path, shown, codes, cache_dir = job[:4]
    mode = _fix_mode(job)
    unfixable = _unfixable(job)
    project = project_for(str(Path(path).parent))
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return f"torchcheck: error: cannot read {shown}: {e.strerror}"
    if b"torch" not in data:
        return FileResult(shown, skipped=True)
    k = cache.key(data, shown, codes, project, unfixable) if cache_dir is not None else None
    if k is not None:
        hit = cache.load(cache_dir, k, _still_valid(cache_dir))
        if hit is not None and not _has_fixes(hit, mode):
            return hit
    facts = _facts(path, cache_dir)
    if mode is not None and not shown.endswith(".ipynb"):
        result = fix_bytes(data, shown, codes, project, mode == UNSAFE, unfixable, facts)
        if result.fixed is None or result.fixed.error is None:
            final = result.fixed.source.encode(result.fixed.encoding) if result.fixed else data
            if cache_dir is not None:
                cache.store(cache_dir, cache.key(final, shown, codes, project, unfixable), result, facts.deps)
        return result
    result = lint_bytes(data, shown, codes, project, unfixable, facts)
    if k is not None:
        cache.store(cache_dir, k, result, facts.deps)
    return result


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
        return FileResult(shown, [Finding(shown, 1, 1, 1, 1, registry.SYNTAX_ERROR.CODE, registry.SYNTAX_ERROR.NAME,
                                          str(e), registry.SYNTAX_ERROR.SEVERITY)])
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
