"""The runtime checks of ``torchcheck run`` inside a pytest test: the selection, the watch around a test's call
or a ``with`` block, and the failure that lists what the checks saw.

:mod:`pytest_torchcheck.watch.plugin` (the hooks, loaded with pytest) imports this module only when a test is
watched; it imports torch only when a watch starts. A watch is a :class:`~.watcher.Watcher`: torch is patched
while the test's body (or the block) runs and restored after it, whether it returned, failed or raised.

When the body also fails, the findings win: the test fails with them, and the body's own exception is chained
as their cause, so pytest prints it first (its traceback ending at the user's line) and the findings last. A
wrong loop often explains a failing assertion after it (a loss that did not fall); the findings say why.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Generator

import pytest

from pytest_torchcheck import core
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lint_rules.diagnostics import Finding
    from pytest_torchcheck.watch.watcher import Watcher

CHECK = "torchcheck_watch"
SIGNATURE = "torchcheck_watch(enabled=True, *, select=None, ignore=None)"
KEYWORDS = ("enabled", "select", "ignore")


class WatchCheckWarning(pytest.PytestWarning):
    """A runtime check raised: its handler was skipped and the test went on (a bug in torchcheck, not the test)."""


# ---------------------------------------------------------------- selection
def _selectors(value: Any, source: str) -> list[str]:
    """``"TRN101, TRN2"`` or ``["TRN101", "TRN2"]`` as a list of selectors; a usage error naming ``source`` else."""
    if value is None:
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise TorchcheckUsageError(f"{source}={value!r}: expected codes or prefixes as a list of strings or one "
                                   f"comma-separated string, e.g. ['TRN101', 'TRN2'] or 'TRN101,TRN2'")
    return [item.strip() for item in items if item.strip()]


def selection(select: Any, ignore: Any, where: str, at: tuple[str, int] | None = None) -> list[str]:
    """The runtime checks to run: ``select`` (default: all but the opt-in ones, as ``torchcheck run``) less
    ``ignore``, each code or prefix validated as the linter and ``torchcheck run --select`` validate it. A
    selection that names only codes with no runtime check (yet) runs nothing, with a warning (at ``at``, a
    file and line, when given)."""
    from lint_rules.errors import UsageError
    from pytest_torchcheck.watch.watcher import codes, select_checks

    available = codes()
    selected = _selectors(select, f"{where}: select")
    ignored = _selectors(ignore, f"{where}: ignore")
    try:
        chosen, nothing = select_checks(selected, ignored, f"select={select!r}", f"ignore={ignore!r}")
    except UsageError as e:
        raise TorchcheckUsageError(f"{where}: {e}; the runtime checks are {', '.join(available)}") from None
    if nothing:
        _warn(f"{where}: select={select!r} selects no runtime check, so nothing is watched; the runtime checks "
              f"are {', '.join(available)}", at)
    return chosen


def marker_selection(args: tuple, kwargs: dict[str, Any], where: str,
                     at: tuple[str, int] | None = None) -> list[str] | None:
    """The codes a ``@pytest.mark.torchcheck_watch(...)`` watches; None for ``torchcheck_watch(False)``."""
    if len(args) > 1:
        raise TorchcheckUsageError(f"{where}: takes at most 1 positional argument (enabled, True or False), got "
                                   f"{len(args)}: {', '.join(repr(a) for a in args)}; signature: {SIGNATURE}")
    unknown = sorted(set(kwargs) - set(KEYWORDS))
    if unknown:
        raise TorchcheckUsageError(f"{where}: unknown keyword {unknown[0]!r}; valid keywords: {', '.join(KEYWORDS)}; "
                                   f"signature: {SIGNATURE}")
    if args and "enabled" in kwargs:
        raise TorchcheckUsageError(f"{where}: enabled given twice (positionally and as a keyword); signature: "
                                   f"{SIGNATURE}")
    enabled = args[0] if args else kwargs.get("enabled", True)
    if not isinstance(enabled, bool):
        raise TorchcheckUsageError(f"{where}: enabled={enabled!r} must be True or False (False: do not watch this "
                                   f"test, under --torchcheck-watch too); signature: {SIGNATURE}")
    codes = selection(kwargs.get("select"), kwargs.get("ignore"), where, at)  # validated even when disabled
    return codes if enabled else None


# ------------------------------------------------------------------ failure
def _finding_line(f: Finding, cwd: str, start: str | None) -> str:
    """The linter's text line for ``f``, its path relative to ``start`` (where pytest was run) when under it:
    the watch wrote it relative to ``cwd``, the working directory when it started (a test may have changed it)."""
    import os

    from pytest_torchcheck.watch.sites import display_path

    path = display_path(os.path.join(cwd, f.path), start) if start is not None else f.path
    return f"{path}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def failure_message(watcher: Watcher, codes: list[str], where: str, change: str,
                    test_error: BaseException | None = None, start: str | None = None) -> str:
    """What the checks saw, one linter line per finding, and how to turn a check off (``change``, with
    ``{ignore}`` for the codes found)."""
    from lint_rules.registry import docs_url

    findings = watcher.findings
    lines = [f"{CHECK}: {_plural(len(findings), 'finding')} while {where} ran "
             f"({_plural(watcher.events.steps, 'optimizer step')} watched; checks: {', '.join(codes)})"]
    lines += [f"  {_finding_line(f, watcher.events.sites.cwd, start)}" for f in findings]
    if test_error is not None:
        text = str(test_error).strip().splitlines()
        lines.append(f"  the test also failed (shown above): {type(test_error).__name__}"
                     + (f": {text[0]}" if text else ""))
    for code, name in sorted({(f.code, f.name) for f in findings}):
        lines.append(f"  {code}: {docs_url(name)}")
    found = sorted({f.code for f in findings})
    lines.append(f"  to leave a check out: {change.format(ignore=found)}")
    return "\n".join(lines)


def _is_failure(error: BaseException | None) -> bool:
    """Whether ``error`` fails the test (an exception, ``pytest.fail``), not a skip, an xfail or an interrupt."""
    if error is None or isinstance(error, (pytest.skip.Exception, pytest.xfail.Exception)):
        return False
    return isinstance(error, (Exception, pytest.fail.Exception))


def _warn(message: str, at: tuple[str, int] | None) -> None:
    """A WatchCheckWarning shown at the test's line ``at`` (its file and line), not at torchcheck's."""
    if at is None:
        warnings.warn(WatchCheckWarning(message), stacklevel=3)
    else:
        warnings.warn_explicit(WatchCheckWarning(message), WatchCheckWarning, at[0], at[1])


def _warn_errors(watcher: Watcher, where: str, at: tuple[str, int] | None) -> None:
    for error in watcher.errors:
        _warn(f"{CHECK}: a runtime check failed and was skipped while {where} ran: {error}", at)


def _failure(watcher: Watcher, codes: list[str], where: str, change: str, error: BaseException | None,
             at: tuple[str, int] | None, start: str) -> TorchcheckFailure | None:
    """The failure to raise for what ``watcher`` saw (None: nothing to report), chained to the body's ``error``."""
    _warn_errors(watcher, where, at)
    if not watcher.findings or (error is not None and not _is_failure(error)):
        return None
    failure = TorchcheckFailure(failure_message(watcher, codes, where, change, error, start), CHECK)
    failure.__cause__ = error
    return failure


# --------------------------------------------------------------- the marker
def watch_call(item: pytest.Item, codes: list[str]) -> Generator[None, Any, Any]:
    """The body of the ``pytest_runtest_call`` wrapper of a watched test (``yield from`` it): the test's call
    runs with the checks installed; their findings fail the test at its ``def`` line."""
    __tracebackhide__ = True
    from pytest_torchcheck.tracebacks import raise_at_test

    core.import_torch("@pytest.mark.torchcheck_watch")
    from pytest_torchcheck.watch.watcher import Watcher

    watcher = Watcher(codes)
    error: BaseException | None = None
    watcher.__enter__()
    try:
        result = yield
    except BaseException as e:  # the body failed: torch is restored, then its findings are reported
        error = e
    finally:
        watcher.__exit__(None, None, None)
    change = "@pytest.mark.torchcheck_watch(ignore={ignore!r})"
    if item.get_closest_marker("torchcheck_watch") is None:  # watched by --torchcheck-watch
        change += "; not to watch this test: @pytest.mark.torchcheck_watch(False)"
    code = getattr(getattr(item, "function", None), "__code__", None)
    at = (code.co_filename, code.co_firstlineno) if code is not None else None
    failure = _failure(watcher, codes, item.nodeid, change, error, at, str(item.config.invocation_params.dir))
    if failure is not None:
        raise_at_test(getattr(item, "function", None), failure)
    if error is not None:
        raise error
    return result


# -------------------------------------------------------------- the fixture
class WatchFixture:
    """The ``torchcheck_watch`` fixture: ``with torchcheck_watch(select=["TRN1"]): train(model, loader)``.

    The block runs with the runtime checks installed; at its end, their findings fail the test (a
    ``TorchcheckFailure`` raised at the ``with`` line). ``as watcher`` gives the
    :class:`~pytest_torchcheck.watch.watcher.Watcher` (``.findings``, ``.events.steps``) once the block ended.
    """

    def __init__(self, test_id: str, default: tuple[Any, Any], start: str) -> None:
        self._test_id = test_id
        self._start = start  # where pytest was run: findings' paths are shown relative to it
        self._default = default  # (select, ignore) of the test's marker
        self._open: list[_Block] = []
        self._closed = False

    def __call__(self, *, select: Any = None, ignore: Any = None) -> _Block:
        __tracebackhide__ = True
        caller = sys._getframe(1)
        from pytest_torchcheck.watch.sites import display_path

        at = (caller.f_code.co_filename, caller.f_lineno)
        site = f"{display_path(at[0])}:{at[1]}"
        where = f"torchcheck_watch(...) at {site} in {self._test_id}"
        if self._closed:
            raise TorchcheckUsageError(f"{where}: the torchcheck_watch fixture was used after its test ended")
        if select is None and ignore is None:
            select, ignore = self._default
        return _Block(self, selection(select, ignore, where, at), f"the block at {site} in {self._test_id}", at)

    def close(self) -> None:
        """After the test: a block entered and never exited (``__enter__`` called by hand) is uninstalled."""
        self._closed = True
        while self._open:
            self._open.pop().watcher.__exit__(None, None, None)


class _Block:
    """One ``with torchcheck_watch(...)`` block. A class, not a generator, so that its failure's traceback ends
    at the user's ``with`` line instead of in contextlib."""

    def __init__(self, fixture: WatchFixture, codes: list[str], where: str, at: tuple[str, int]) -> None:
        self._fixture, self.codes, self._where, self._at = fixture, codes, where, at
        self.watcher: Any = None

    def __enter__(self) -> Watcher:
        __tracebackhide__ = True
        if self.watcher is not None:
            raise TorchcheckUsageError(f"{self._where}: a torchcheck_watch(...) block runs once; call "
                                       f"torchcheck_watch(...) again for another block")
        core.import_torch("the torchcheck_watch fixture")
        from pytest_torchcheck.watch.watcher import Watcher

        self.watcher = Watcher(self.codes)
        self.watcher.__enter__()
        self._fixture._open.append(self)
        return self.watcher

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        __tracebackhide__ = True
        self._fixture._open.remove(self)
        self.watcher.__exit__(None, None, None)
        failure = _failure(self.watcher, self.codes, self._where, "torchcheck_watch(ignore={ignore!r})", error,
                           self._at, self._fixture._start)
        if failure is not None:
            raise failure
