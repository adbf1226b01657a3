"""Hooks of the watch in pytest (registered by ``pytest_torchcheck.plugin``); imports no torch.

``@pytest.mark.torchcheck_watch`` runs a test's body under the runtime checks of ``torchcheck run``, the
``torchcheck_watch`` fixture a block of it, and ``--torchcheck-watch`` (ini ``torchcheck_watch``, environment
``TORCHCHECK_WATCH``) every test; ``@pytest.mark.torchcheck_watch(False)`` leaves a test out. A finding fails
the test with the linter's line for it. Precedence: marker > command line > environment > ini > default.

The work is in :mod:`.pytest_form`, imported by the first watched test: a suite that watches nothing loads
neither it nor torch, and pays one marker lookup per test.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator

import pytest

from pytest_torchcheck import core
from pytest_torchcheck.core import Marker, Option, our_markers

WATCH_HELP = ("watch every test's body with torchcheck run's runtime checks (TRN101 ...) and fail it with their "
              "findings; a test whose module imported torch is watched; @pytest.mark.torchcheck_watch(False) "
              "leaves one out")
OPTIONS = {
    "watch": Option("torchcheck_watch", WATCH_HELP, "TORCHCHECK_WATCH", core.parse_bool, "false",
                    {"action": "store_const", "const": "true"}),
}
MARKER = Marker("torchcheck_watch", "torchcheck_watch(enabled=True, *, select=None, ignore=None)",
                "run the test's body under torchcheck run's runtime checks (select/ignore: codes or prefixes, "
                "e.g. select=['TRN1']) and fail it with their findings; torchcheck_watch(False) does not watch "
                "it, under --torchcheck-watch too")

WATCH_ALL = pytest.StashKey[bool]()  # config: --torchcheck-watch and its twins
WATCHED = pytest.StashKey[Any]()  # item: (codes, by_marker) of a watched test
MARKER_ERROR = pytest.StashKey[str]()
_RUN_HOOKS = "torchcheck-watch-runs"


def pytest_addoption(parser: pytest.Parser) -> None:
    core.add_options(parser, OPTIONS)


def pytest_configure(config: pytest.Config) -> None:
    core.register_markers(config, MARKER)
    config.stash[WATCH_ALL] = core.option_value(config, OPTIONS["watch"])
    core.add_rerun_flags(config, _rerun_flags)


def _rerun_flags(config: pytest.Config) -> list[str]:
    return ["--torchcheck-watch"] if config.stash.get(WATCH_ALL, False) else []


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # The per-test hooks are registered only when some test is watched: other suites pay nothing per test.
    if config.pluginmanager.has_plugin(_RUN_HOOKS):
        return
    if config.stash[WATCH_ALL] or any("torchcheck_watch" in our_markers(i) for i in items):
        config.pluginmanager.register(_RunHooks(), _RUN_HOOKS)


def _marker(item: pytest.Item) -> Any:
    return item.get_closest_marker("torchcheck_watch") if "torchcheck_watch" in our_markers(item) else None


def _runtest_setup(item: pytest.Item) -> None:
    marker = _marker(item)
    if marker is None and not (item.config.stash[WATCH_ALL] and isinstance(item, pytest.Function)):
        return
    from pytest_torchcheck.errors import TorchcheckUsageError
    from pytest_torchcheck.watch import pytest_form

    where = f"@pytest.mark.torchcheck_watch on {item.nodeid}"
    try:
        codes = pytest_form.marker_selection(marker.args, marker.kwargs, where, _test_line(item)) \
            if marker is not None else \
            pytest_form.selection(None, None, f"--torchcheck-watch on {item.nodeid}")
    except TorchcheckUsageError as e:
        item.stash[MARKER_ERROR] = str(e)
    if MARKER_ERROR in item.stash:  # failed outside the except: no "During handling..." repeat of the message
        pytest.fail(item.stash[MARKER_ERROR], pytrace=False)
    if codes is None:
        return
    if not isinstance(item, pytest.Function):
        pytest.fail(f"{where}: only test functions can be watched", pytrace=False)
    item.stash[WATCHED] = (codes, marker is not None)


def _test_line(item: pytest.Item) -> tuple[str, int] | None:
    """Where a warning about ``item`` is shown: its function's file and first line."""
    code = getattr(getattr(item, "function", None), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else None


def _runtest_call(item: pytest.Item) -> Iterator[None]:
    watched = item.stash.get(WATCHED, None)
    if watched is None or "torchcheck_watch" in getattr(item, "fixturenames", ()):
        return (yield)  # a test that takes the fixture is watched in its blocks (the marker sets their codes)
    codes, by_marker = watched
    # --torchcheck-watch watches the tests that can use torch: a suite (or a test run) that never imported torch
    # has nothing to watch and must not pay for importing it (as --torchcheck-nan-guard).
    if not by_marker and "torch" not in sys.modules:
        return (yield)
    from pytest_torchcheck.watch.pytest_form import watch_call

    return (yield from watch_call(item, codes))


class _RunHooks:
    """The hooks that run around every test, once some test of the session is watched."""

    pytest_runtest_setup = staticmethod(pytest.hookimpl(tryfirst=True)(_runtest_setup))
    pytest_runtest_call = staticmethod(pytest.hookimpl(wrapper=True)(_runtest_call))


@pytest.fixture
def torchcheck_watch(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A WatchFixture: ``with torchcheck_watch(select=["TRN1"]): train(...)`` fails the test with the findings."""
    from pytest_torchcheck.watch.pytest_form import WatchFixture

    marker = _marker(request.node)
    default = (marker.kwargs.get("select"), marker.kwargs.get("ignore")) if marker is not None else (None, None)
    helper = WatchFixture(request.node.nodeid, default, str(request.config.invocation_params.dir))
    try:
        yield helper
    finally:
        helper.close()
