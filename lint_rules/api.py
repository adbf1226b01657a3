"""The linter's one public entry point, under every front end.

As Fixit's ``fixit_bytes``/``fixit_file``/``fixit_paths``::

    from lint_rules.api import Settings, lint_file, lint_paths, lint_text

    settings = Settings.resolve()                    # [tool.torchcheck] nearest the working directory
    for result in lint_paths(["src"], settings):     # in a stable order: discovery's
        for f in result.findings:
            print(f.location, f.code, f.message)

A :class:`Settings` is resolved once from the configuration and the options (selection with the
preview tier, per-file ignores, fix mode and safety, unfixable codes, cache, torch bound,
.gitignore); the command line, the flake8 plugin, ``pytest --torchcheck-lint`` and the benchmarks
call these three functions and nothing below them, so one file gives the same findings through
each of them.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from lint_rules import cache, registry
from lint_rules.config import Config, find_pyproject, load
from lint_rules.diagnostics import SAFE, UNSAFE, FileResult
from lint_rules.errors import FileError, UsageError
from lint_rules.files import discover, display, matches, read_regular
from lint_rules.records import record, replace
from lint_rules.runner import (FileContext, decode_source as _decode, has_fixes, lint_bytes, lint_decoded,
                                project_for, screen, screen_text, skips, still_valid)

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    from typing import Iterable, Iterator

    from lint_rules.project import ProjectInfo

__all__ = ["Settings", "decode_source", "dependencies_hold", "files_of", "lint_file", "lint_paths", "lint_text"]

# Below this many files per worker, process start-up costs more than it saves.
_MIN_FILES_PER_WORKER = 8
_CACHE_DIR = cache.DEFAULT_DIR  # a name of its own: Settings.resolve's ``cache`` argument hides the module


@record(frozen=True)
class Settings:
    """Everything that decides a run's results, resolved once (see :meth:`resolve`)."""

    config: Config  # the [tool.torchcheck] it came from (exclude, per-file ignores, root, fail-on)
    codes: frozenset  # the selected codes, before per-file ignores
    fix: str | None = None  # None: report only; "safe" or "unsafe": the fixes to apply
    unsafe_fixes: bool = False  # whether unsafe fixes count as available (and are applied by a fix run)
    unfixable: tuple = ()  # codes whose findings carry no fix
    cache_dir: str | None = None  # where results are cached; None: no cache
    respect_gitignore: bool = True  # lint_paths skips what git ignores when walking a directory
    jobs: int | None = None  # worker processes for lint_paths (None: one per core)
    project: ProjectInfo | None = None  # the torch bound; None: read from each file's project
    # Codes whose possible findings are reported, not only the certain ones: every code with
    # --preview, else those selected by their own code. None: all of ``codes``.
    possible: frozenset | None = None

    @classmethod
    def resolve(cls, start: str | Path | None = None, *, config: str | Path | Config | None = None,
                isolated: bool = False, select: Iterable[str] | None = None, extend_select: Iterable[str] = (),
                ignore: Iterable[str] = (), preview: bool | None = None, fix: bool = False,
                unsafe_fixes: bool | None = None, cache: bool = False, cache_dir: str | Path | None = None,
                respect_gitignore: bool | None = None, jobs: int | None = None,
                project: ProjectInfo | None = None) -> Settings:
        """Settings from ``[tool.torchcheck]`` and options that override it, as ``torchcheck lint`` has them.

        The configuration is the nearest ``pyproject.toml`` with a ``[tool.torchcheck]`` table at or
        above ``start`` (default: the working directory), the file ``config`` names, a ``Config``
        itself, or none (``isolated``). ``select`` replaces the configured selection; ``extend_select``
        and ``ignore`` adjust it; ``preview`` overrides the configured tier. ``fix`` makes results
        carry the fixed text (``result.fixed``); writing it is the caller's. ``cache`` (or a
        ``cache_dir``) reads and writes the result cache, next to the configuration by default.
        Raises :class:`~lint_rules.errors.TorchcheckError` naming a bad code, key or file.
        """
        cfg = _load_config(Path(start) if start is not None else Path.cwd(), config, isolated)
        if preview is not None:
            cfg = replace(cfg, preview=preview)
        codes = _configured_codes(cfg, list(select or ()))
        codes |= registry.expand(list(extend_select), "--extend-select", cfg.preview)
        codes -= registry.expand(list(ignore), "--ignore")
        named = [*(select or ()), *extend_select] if select else [*(cfg.select or ()), *cfg.extend_select,
                                                                  *extend_select]
        possible = codes if cfg.preview else codes & registry.exact_codes(named)
        unsafe = cfg.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
        if cache_dir is not None:
            where: str | None = str(cache_dir)
        else:
            where = str(cfg.root / _CACHE_DIR) if cache else None
        return cls(cfg, frozenset(codes), (UNSAFE if unsafe else SAFE) if fix else None, bool(unsafe),
                   _unfixable_codes(cfg), where,
                   cfg.respect_gitignore if respect_gitignore is None else respect_gitignore, jobs, project,
                   frozenset(possible))

    def codes_for(self, path: str | Path) -> tuple[str, ...]:
        """The codes that apply to ``path``: the selection less its per-file ignores, sorted."""
        codes = self.codes
        cfg = self.config
        for pattern, ignored in cfg.per_file_ignores.items():
            if matches(Path(path), [pattern], cfg.root):
                codes = codes - registry.expand(ignored, "per-file-ignores")
        return tuple(sorted(codes))

    def project_for(self, path: str | Path) -> ProjectInfo:
        """The project facts (torch bound) for a file at ``path``."""
        if self.project is not None:
            return self.project
        return project_for(os.path.dirname(os.path.abspath(path)))

    def context_for(self, path: str | Path, shown: str) -> FileContext:
        """What, besides its text, decides the result of the file at ``path`` shown as ``shown``: built
        once per file, here, and handed down to the runner and the engine."""
        codes = self.codes_for(path)
        possible = None if self.possible is None else tuple(c for c in codes if c in self.possible)
        return FileContext(shown, codes, self.project_for(path), self.unfixable, self.fix, possible)


def lint_text(source: str, path: str | Path = "-", settings: Settings | None = None) -> FileResult:
    """Lint ``source`` as the file ``path`` (per-file ignores, torch bound and cross-file facts are
    those of that path; it need not exist). A notebook path (``.ipynb``) takes the notebook's JSON.
    In a fix run (``Settings.resolve(fix=True)``) the result is that of the fixed text, which
    ``result.fixed.source`` holds; notebooks are never fixed.

    Raises :class:`~lint_rules.errors.FileError` for a notebook that is not UTF-8, and for valid
    Python it cannot analyse (nested too deeply, or a construct LibCST cannot read).
    """
    settings = settings if settings is not None else Settings.resolve(_dir_of(path))
    shown = str(path)
    context = settings.context_for(shown, shown)
    if shown.endswith(".ipynb"):
        return lint_bytes(source.encode("utf-8"), context)
    screened = screen_text(source, shown)
    if screened is not None:
        return screened
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import index_for

    return lint_decoded(source, "utf-8", context, ProjectFacts(index_for(None), shown))


def decode_source(data: bytes, path: str | Path = "-") -> tuple[str, str]:
    """The text of a Python file's bytes and its encoding (``path`` names the file in errors), decoded as
    the linter decodes a file: by its PEP 263 coding comment, else as UTF-8. Raises
    :class:`~lint_rules.errors.FileError` saying why it cannot be decoded and what to do about it."""
    return _decode(data, str(path))


def dependencies_hold(depends_on: list) -> bool:
    """Whether what a result depended on in other files (``FileResult.depends_on``) still holds on
    disk: the same imports resolve to the same files, whose summaries did not change. An editor
    re-lints an open buffer when a module it imports is saved and this turns False."""
    if not depends_on:
        return True
    from lint_rules.analysis.project_index import index_for

    return index_for(None).still_valid(depends_on)


def forget_project_files() -> None:
    """Forget what this process read of the project's layout (import roots, which files import
    which module): a long-lived caller does this when files were saved, created or deleted."""
    from lint_rules.analysis.project_index import index_for

    index_for(None).forget_files()


def lint_file(path: str | Path, settings: Settings | None = None, *, shown: str | None = None) -> FileResult:
    """Lint the file at ``path`` (Python or notebook; read, decoded and cached as the command line does).

    ``shown`` is the path in findings (default: relative to the working directory). A file that
    cannot be read or decoded comes back with ``result.error`` saying why and no findings.
    """
    settings = settings if settings is not None else Settings.resolve(_dir_of(path))
    job = _prepare(Path(path), settings, shown)
    return job if isinstance(job, FileResult) else _lint_job(settings, job)


def lint_paths(paths: Iterable[str | Path], settings: Settings | None = None, *,
               notes: list[str] | None = None) -> Iterator[FileResult]:
    """Lint the files under ``paths`` (directories are walked; configured excludes and, with
    ``respect_gitignore``, git's ignores apply), yielding one result per file in discovery order
    (sorted, each file once) whatever the number of worker processes.

    Each file is read, hashed and looked up in the cache once; only the misses are linted, in
    ``settings.jobs`` processes when there are enough of them. ``notes`` collects warnings about
    the walk (an unreadable directory).
    """
    settings = settings if settings is not None else Settings.resolve()
    # The cache (or the no-torch pre-filter) answers here; only the rest is linted.
    jobs = [_prepare(p, settings) for p in files_of(paths, settings, notes=notes)]
    todo = [j for j in jobs if not isinstance(j, FileResult)]
    workers = min(settings.jobs or _cpu_count(), max(1, len(todo) // _MIN_FILES_PER_WORKER))
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor  # here: a warm run needs no worker machinery

        with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker) as pool:
            # Largest files first, in small chunks, so that no worker is left with a big file at
            # the end while the others idle; results still come out in discovery order.
            largest_first = sorted(range(len(todo)), key=lambda i: -len(todo[i].data))
            done = pool.map(partial(_lint_job, settings), [todo[i] for i in largest_first],
                            chunksize=max(1, min(8, len(todo) // (workers * 16))))
            results: list = [None] * len(todo)
            for i, r in zip(largest_first, done):
                results[i] = r
            yield from _merge(jobs, iter(results))
    else:
        yield from _merge(jobs, (_lint_job(settings, j) for j in todo))


def files_of(paths: Iterable[str | Path], settings: Settings, *, notes: list[str] | None = None) -> list[Path]:
    """The files :func:`lint_paths` would lint (``torchcheck lint --show-files``): each file once, under
    the first of its names in discovery order (a symbolic link to a file of the same tree, or the same
    file named twice, is linted, reported and fixed once)."""
    cfg = settings.config
    found = discover([str(p) for p in paths], cfg.exclude, cfg.root, respect_gitignore=settings.respect_gitignore,
                     notes=notes)
    seen: set[tuple[int, int]] = set()
    unique = []
    for path in found:
        try:
            st = os.stat(path)  # through links; a stat, not realpath's walk of every component
        except OSError:
            unique.append(path)  # reading it reports why
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            unique.append(path)
    return unique


# ------------------------------------------------------------------ internals
@record
class _Job:
    """A file that the cache could not answer: its bytes and cache key travel with it (read once)."""

    path: str
    context: FileContext
    data: bytes
    key: str | None


def _merge(jobs: list, done: Iterator[FileResult]) -> Iterator[FileResult]:
    for job in jobs:  # input order: the worker results come back in the order of the misses
        yield job if isinstance(job, FileResult) else next(done)


def _prepare(path: Path, settings: Settings, shown: str | None = None) -> FileResult | _Job:
    """The file's result when no linting is needed (unreadable, never mentions torch, cached), else its job."""
    shown = shown if shown is not None else display(path)
    try:
        data = read_regular(path)  # never blocks: a FIFO swapped in since discovery is this file's error
    except OSError as e:
        return FileResult(shown, error=f"cannot read {shown}: {e.strerror}")
    screened = screen(data, shown)  # never mentions torch (once known to be source), or not source at all
    if screened is not None:  # the pre-filter, once, before hashing: nothing below asks again
        return screened
    context = settings.context_for(path, shown)
    cache_dir = settings.cache_dir
    if cache_dir is None:
        return _Job(str(path), context, data, None)
    k = cache.key(data, shown, context.codes, context.project, context.unfixable, context.possible)
    hit = cache.load(cache_dir, k, still_valid(cache_dir))
    if hit is not None and not has_fixes(hit, settings.fix) and (not hit.skipped or skips(data, shown)):
        return hit  # a skip is decided from the bytes, never taken from the cache
    return _Job(str(path), context, data, k)


def _lint_job(settings: Settings, job: _Job) -> FileResult:
    """Lint one file's bytes (in a worker process, too) and cache the result."""
    from lint_rules.analysis.cross_file import ProjectFacts
    from lint_rules.analysis.project_index import index_for

    cache_dir = settings.cache_dir
    context = job.context
    facts = ProjectFacts(index_for(cache_dir), job.path)
    try:
        result = lint_bytes(job.data, context, facts)
    except FileError as e:
        return FileResult(context.shown, error=str(e))
    if result.fixed is not None or (context.fix is not None and not context.shown.endswith(".ipynb")):
        # A fix run: the result is that of the fixed text, cached under the fixed bytes (unless a fix broke it).
        if cache_dir is not None and (result.fixed is None or result.fixed.error is None):
            final = result.fixed.source.encode(result.fixed.encoding) if result.fixed else job.data
            cache.store(cache_dir, cache.key(final, context.shown, context.codes, context.project, context.unfixable,
                                             context.possible),
                        result, facts.deps)
    elif job.key is not None:
        cache.store(cache_dir, job.key, result, facts.deps)
    return result


def _start_worker() -> None:
    """A worker process's first act: import the engine and every rule (LibCST's node classes among
    them), with the cyclic collector off, which would otherwise run dozens of times over objects
    that all live as long as the process (about 9 ms of LibCST's 130 ms import); then freeze them,
    so that the collections between files do not traverse them either."""
    import gc

    enabled = gc.isenabled()  # as the parent had it when it forked
    gc.disable()
    try:
        from lint_rules import engine  # noqa: F401  (what _lint_job needs)
        from lint_rules.analysis.cross_file import ProjectFacts  # noqa: F401
        from lint_rules.analysis.project_index import index_for  # noqa: F401

        registry.active_rules()
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _dir_of(path: str | Path) -> Path:
    return Path(path).parent if str(path) != "-" else Path.cwd()


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _load_config(start: Path, config: str | Path | Config | None, isolated: bool) -> Config:
    if isolated:
        return Config()
    if isinstance(config, Config):
        return config
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise UsageError(f"--config {str(config)!r}: no such file")
        return load(path)
    found = find_pyproject(start)
    return load(found) if found is not None else Config()


def _configured_codes(cfg: Config, select: list[str]) -> set[str]:
    """The configuration's selection (``select``, from the command line, replaces it)."""
    preview = cfg.preview  # off: ALL and prefixes leave the preview rules out
    if select:
        codes = registry.expand(select, "--select", preview)
    else:
        where = f"[tool.torchcheck] in {cfg.path}" if cfg.path else "the defaults"
        codes = registry.expand(cfg.select, where, preview) if cfg.select is not None \
            else registry.default_codes(preview)
        codes |= registry.expand(cfg.extend_select, where, preview)
    return codes - registry.expand(cfg.ignore, f"[tool.torchcheck] ignore in {cfg.path}")


def _unfixable_codes(cfg: Config) -> tuple[str, ...]:
    """The codes whose fixes are never offered: not in ``fixable`` (default ALL), or in ``unfixable``."""
    if cfg.fixable is None and not cfg.unfixable:
        return ()
    every = registry.expand(["ALL"], "ALL")
    fixable = registry.expand(cfg.fixable, "fixable") if cfg.fixable is not None else every
    return tuple(sorted((every - fixable) | registry.expand(cfg.unfixable, "unfixable")))
