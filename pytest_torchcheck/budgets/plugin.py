"""Hooks of the budgets (registered by ``pytest_torchcheck.plugin``); imports no torch.

``@pytest.mark.budget(...)`` measures the whole test body, the ``budget`` fixture measures a region,
and ``torchcheck_budget`` (ini, ``TORCHCHECK_BUDGET``, ``--torchcheck-budget``) sets defaults for both.
Precedence: marker or fixture keyword > command line > environment > ini.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_torchcheck import core
from pytest_torchcheck.budgets import spec, units  # pure Python: the marker's signature comes from spec's keys
from pytest_torchcheck.core import Marker, Option, our_markers
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

# The baselines load on first use (a budgeted test): a suite without budgets does not pay for them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pytest_torchcheck.budgets.baseline import Baselines

BUDGET_HELP = ("default budget for every @pytest.mark.budget test and budget fixture region, as key=value pairs "
               "(e.g. 'syncs=0, warmup=1'); a marker's or fixture's own keys win")
SAVE_HELP = "save each budgeted region's median time as baseline NAME (one per machine, e.g. the host name)"
COMPARE_HELP = "fail a budgeted region slower than baseline NAME x the tolerance"
TOLERANCE_HELP = "baseline comparison tolerance: a ratio >= 1 (default 1.3: up to 30% slower passes)"
DIR_HELP = "folder of the saved baselines, relative to the rootdir (default .torchcheck/baselines)"


def _spec(value: str, source: str) -> dict[str, Any]:
    return spec.parse_spec_string(value, source)


def _name(value: str, source: str) -> str | None:
    value = value.strip()
    if not value:
        return None
    if not all(c.isalnum() or c in "._-" for c in value) or value.startswith("."):
        raise spec.BudgetUsageError(f"{source}: baseline name {value!r} may hold only letters, digits, '.', '_' "
                               f"and '-' (it names a folder), and must not start with '.'")
    return value


def _ratio(value: str, source: str) -> float:
    try:
        ratio = float(value)
    except ValueError:
        ratio = float("nan")
    if 1 <= ratio < float("inf"):
        return ratio
    try:
        return units.parse_ratio(value.strip())
    except units.UnitError as e:
        raise spec.BudgetUsageError(f"{source}: {e}") from None


def _dir(value: str, source: str) -> str:
    if not value.strip():
        raise spec.BudgetUsageError(f"{source}: expected a folder path, got an empty value")
    return value.strip()


OPTIONS = {
    "budget": Option("torchcheck_budget", BUDGET_HELP, "TORCHCHECK_BUDGET", _spec, "", {"metavar": "SPEC"}),
    "baseline_save": Option("torchcheck_baseline_save", SAVE_HELP, "TORCHCHECK_BASELINE_SAVE", _name, "",
                            {"metavar": "NAME"}),
    "baseline_compare": Option("torchcheck_baseline_compare", COMPARE_HELP, "TORCHCHECK_BASELINE_COMPARE", _name,
                               "", {"metavar": "NAME"}),
    "baseline_tolerance": Option("torchcheck_baseline_tolerance", TOLERANCE_HELP, "TORCHCHECK_BASELINE_TOLERANCE",
                                 _ratio, "1.3", {"metavar": "RATIO"}),
    "baseline_dir": Option("torchcheck_baseline_dir", DIR_HELP, "TORCHCHECK_BASELINE_DIR", _dir,
                           ".torchcheck/baselines", {"metavar": "DIR"}),
}

MARKER = Marker("budget", spec.SIGNATURE, "fail the test when its body exceeds a limit (memory peaks and growth, "
                "host-device syncs, FLOPs, ATen ops, torch.compile graph breaks/recompiles, time); limits take "
                "units ('512MiB', '200ms'); warmup=N runs the body N times first")


class Settings:
    """The session's budget defaults (lowest precedence first) and its baselines, opened at first use."""

    def __init__(self, defaults: list[tuple[dict[str, Any], str]], baseline_args: tuple) -> None:
        self.defaults = defaults
        self.baseline_args = baseline_args  # for Baselines(...), built at the first budgeted test
        self._baselines: Any = None

    @property
    def baselines(self) -> Baselines:
        if self._baselines is None:
            from pytest_torchcheck.budgets.baseline import Baselines

            self._baselines = Baselines(*self.baseline_args)
        return self._baselines


SETTINGS = pytest.StashKey[Settings]()
MARKER_BUDGET = pytest.StashKey[Any]()
MARKER_ERROR = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    # The ini keys default to empty: a default comes from OPTIONS only when no layer set the key.
    core.add_options(parser, OPTIONS, default_in_ini_help=True)


def _sources(config: pytest.Config, key: str) -> list[tuple[str, str]]:
    """(raw value, source) from ini, environment and command line, lowest precedence first."""
    return core.option_sources(config, OPTIONS[key])


def _value(config: pytest.Config, key: str) -> tuple[Any, str]:
    opt = OPTIONS[key]
    found = _sources(config, key)
    raw, source = found[-1] if found else (opt.default, f"the default ({opt.flag} or ini {opt.name} changes it)")
    return opt.parse(raw, source), source


def pytest_configure(config: pytest.Config) -> None:
    core.register_markers(config, MARKER)
    try:
        defaults = [(_spec(raw, source), source) for raw, source in _sources(config, "budget")]
        save, _ = _value(config, "baseline_save")
        compare, _ = _value(config, "baseline_compare")
        tolerance, tolerance_source = _value(config, "baseline_tolerance")
        directory, _ = _value(config, "baseline_dir")
    except TorchcheckUsageError as e:  # a BudgetUsageError
        raise pytest.UsageError(str(e)) from None
    config.stash[SETTINGS] = Settings(defaults, (Path(config.rootpath, directory), save, compare, tolerance,
                                                 tolerance_source))


def _marker_budget(item: pytest.Item) -> spec.Budget | None:
    markers = list(item.iter_markers("budget"))  # closest first
    if not markers:
        return None
    layers = list(item.config.stash[SETTINGS].defaults)
    for marker in reversed(markers):
        source = f"@pytest.mark.budget on {item.nodeid}"
        if marker.args:
            raise spec.BudgetUsageError(f"{source}: takes keyword arguments only, got positional "
                                        f"{', '.join(repr(a) for a in marker.args)}; signature: {spec.SIGNATURE}")
        if not marker.kwargs:
            raise spec.BudgetUsageError(f"{source}: no limit given; signature: {spec.SIGNATURE}")
        layers.append((spec.parse_values(marker.kwargs, source), source))
    return spec.build(layers)


def _in_parent_of_ranks(item: pytest.Item) -> bool:
    # Under @pytest.mark.distributed the body runs in each rank's process; measure there, not here.
    return "distributed" in our_markers(item) and "RANK" not in os.environ


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # The per-test hooks are registered only when a test with the marker was collected: a suite without
    # budgets pays nothing per test (the fixture needs no hook).
    if not config.pluginmanager.has_plugin(_RUN_HOOKS) and any("budget" in our_markers(i) for i in items):
        config.pluginmanager.register(_RunHooks(), _RUN_HOOKS)


def _runtest_setup(item: pytest.Item) -> None:
    if "budget" not in our_markers(item):
        return
    try:
        budget = _marker_budget(item)
    except spec.BudgetUsageError as e:
        item.stash[MARKER_ERROR] = str(e)
    if MARKER_ERROR in item.stash:
        pytest.fail(item.stash[MARKER_ERROR], pytrace=False)
    if not isinstance(item, pytest.Function):
        pytest.fail(f"@pytest.mark.budget on {item.nodeid}: only test functions can carry a budget", pytrace=False)
    cuda = sorted(spec.CUDA_KEYS & set(budget.limits))
    if cuda and "RANK" not in os.environ:  # inside a rank, the measurement itself skips without CUDA
        devices = core.devices(item.config)  # found in a subprocess: CUDA stays untouched here
        if devices.cuda_count < 1:
            raise pytest.skip.Exception(
                f"budget {', '.join(cuda)} needs CUDA: no CUDA device found ({devices.source}); "
                f"the limit is not checked on this machine", _use_item_location=True)
    item.stash[MARKER_BUDGET] = budget


def _context(item: pytest.Item) -> Any:
    from pytest_torchcheck.budgets.region import Context

    settings = item.config.stash[SETTINGS]
    ctx = item.stash.get(_CONTEXT, None)
    if ctx is None:
        ctx = item.stash[_CONTEXT] = Context(item.nodeid, settings.defaults, settings.baselines)
    return ctx


_CONTEXT = pytest.StashKey[Any]()


def _runtest_call(item: pytest.Item) -> Iterator[None]:
    budget = item.stash.get(MARKER_BUDGET, None)
    if budget is None or _in_parent_of_ranks(item):
        return (yield)
    from pytest_torchcheck.budgets.region import run_function

    original = item.obj
    ctx = _context(item)

    def budgeted_test(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True

        def body() -> Any:
            __tracebackhide__ = True
            return original(*args, **kwargs)

        try:
            run_function(body, budget, ctx, budget.name or "test body")
        except TorchcheckFailure as e:
            if e.check != "budget" or _raised_in(e, original):
                raise  # the test body's own failure, with its own traceback
            _raise_at_test(original, e)

    # Restored at teardown, after the report: pytest then cuts the traceback at this wrapper, so a budget
    # failure shows its message, not the hook frames it was raised through.
    item.stash[_ORIGINAL] = original
    item.obj = budgeted_test
    return (yield)


_ORIGINAL = pytest.StashKey[Any]()


def _raised_in(error: BaseException, fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return True
        tb = tb.tb_next
    return False


def _raise_at_test(test: Any, error: BaseException) -> None:
    """Raise ``error`` from a frame that pytest shows as the test's ``def`` line, and no other.

    A budget marker's failure is found after the body returned, so no frame of the test is left to end the
    traceback at; the wrapper's own frame would print its arguments (the model, the batch) and its source.
    This frame has the test's file and line and no locals: pytest shows the test's source and the message.
    """
    __tracebackhide__ = True
    code = getattr(test, "__code__", None)
    if code is None:
        raise error.with_traceback(None)
    line = code.co_firstlineno
    try:
        import linecache

        while line < code.co_firstlineno + 50 and not linecache.getline(code.co_filename, line).lstrip().startswith(
                ("def ", "async def ")):
            line += 1  # past the decorators, to the def line
        if not linecache.getline(code.co_filename, line).strip():
            line = code.co_firstlineno
    except Exception:  # a test whose source cannot be read: its first line is close enough
        line = code.co_firstlineno
    namespace: dict[str, Any] = {"__torchcheck_failure__": error.with_traceback(None)}
    # The raise spans two lines so that pytest draws no column markers under the test's def line.
    exec(compile("\n" * (line - 1) + f"def {code.co_name}(): raise (\n    __torchcheck_failure__)\n",
                 code.co_filename, "exec"), namespace)
    namespace[code.co_name]()


def _runtest_teardown(item: pytest.Item) -> None:
    original = item.stash.get(_ORIGINAL, None)
    if original is not None:
        item.obj = original
        del item.stash[_ORIGINAL]


_RUN_HOOKS = "torchcheck-budget-runs"


class _RunHooks:
    """The hooks that run around every test, once a test with a budget marker is in the session."""

    pytest_runtest_setup = staticmethod(pytest.hookimpl(tryfirst=True)(_runtest_setup))
    pytest_runtest_call = staticmethod(pytest.hookimpl(wrapper=True)(_runtest_call))
    pytest_runtest_teardown = staticmethod(pytest.hookimpl(tryfirst=True)(_runtest_teardown))


@pytest.fixture
def budget(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A BudgetFixture: ``with budget(syncs=0): ...`` or ``budget(fn, warmup=1, time="20ms")``."""
    from pytest_torchcheck.budgets.region import BudgetFixture

    helper = BudgetFixture(_context(request.node))
    yield helper
    helper.close()
