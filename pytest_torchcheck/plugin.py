"""The ``pytest11`` entry point: its options, ini keys, markers, fixtures and hooks (the parts shared with the
sub-plugins -- option precedence, stash keys, the marker registry, devices, the report section -- are in
``core``).

Loading this module imports neither torch nor CUDA: torch is imported inside the
fixtures and hooks of tests that use it, and devices are found in a subprocess.
Option precedence: marker > command line > environment > ini > default.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator

import pytest

from pytest_torchcheck import core
from pytest_torchcheck.core import BASE_SEED, ITEM_BASE, ITEM_SEED, Marker, Option, our_markers
from pytest_torchcheck.errors import TorchcheckFailure
from pytest_torchcheck.seeding import derive_seed, seed_everything

# Capabilities with hooks of their own are sub-plugins, registered with this one (so ``-p no:torchcheck``
# disables them all). Each one imports no torch at load time, registers its own options and markers through
# ``core``, and imports nothing from this module.
pytest_plugins = ("pytest_torchcheck.distributed.plugin", "pytest_torchcheck.budgets.plugin",
                  "pytest_torchcheck.watch.plugin")

LINT_HELP = "lint every collected Python file with torchcheck's static rules (one item per file)"
NAN_GUARD_HELP = "guard every test with nan_guard (fail at the first non-finite module output or gradient)"

OPTIONS = {
    "seed": core.SEED,
    "devices": core.DEVICES_OPTION,
    "nan_guard": Option("torchcheck_nan_guard", NAN_GUARD_HELP, "TORCHCHECK_NAN_GUARD", core.parse_bool, "false",
                        {"action": "store_const", "const": "true"}),
    "lint": Option("torchcheck_lint", LINT_HELP, "TORCHCHECK_LINT", core.parse_bool, "false",
                   {"action": "store_const", "const": "true"}),
}


# Marker name -> (signature for --markers, help, {keyword: (types, default)}, positional keywords)
MARKERS: dict[str, tuple[str, str, dict[str, tuple[tuple[type, ...], Any]], tuple[str, ...]]] = {
    "nan_guard": ("nan_guard(detect_anomaly=False, backward=True)",
                  "fail at the first module whose forward output or gradient holds NaN/Inf; "
                  "detect_anomaly=True also enables autograd's anomaly mode",
                  {"detect_anomaly": ((bool,), False), "backward": ((bool,), True)}, ()),
    "requires_cuda": ("requires_cuda(min_devices=1)",
                      "skip unless at least min_devices CUDA devices are present (found without initialising "
                      "CUDA in the pytest process)",
                      {"min_devices": ((int,), 1)}, ("min_devices",)),
    "torchcheck_seed": ("torchcheck_seed(seed)",
                        "base seed for this test, overriding --torchcheck-seed",
                        {"seed": ((int,), None)}, ("seed",)),
}
LINT_MARKER = Marker("torchcheck_lint", "torchcheck_lint", "a torchcheck static-lint item (--torchcheck-lint)")

GUARDS = pytest.StashKey[list]()
MARKER_ERROR = pytest.StashKey[str]()
NAN_GUARD_ALL = pytest.StashKey[bool]()
LINT_ALL = pytest.StashKey[bool]()

_TORCHCHECK_FIXTURES = frozenset({"torch_seed", "torch_device", "nan_guard"})


# ------------------------------------------------------------------ options
def pytest_addoption(parser: pytest.Parser) -> None:
    core.add_options(parser, OPTIONS)


def option_value(config: pytest.Config, key: str) -> Any:
    """This plugin's option ``key``: command line > environment > ini > default."""
    return core.option_value(config, OPTIONS[key])


def pytest_configure(config: pytest.Config) -> None:
    core.register_markers(config, *(Marker(name, signature, help_text)
                                    for name, (signature, help_text, _, _) in MARKERS.items()), LINT_MARKER)
    core.add_rerun_flags(config, _rerun_flags)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "torchcheck_seed" in workerinput:
        config.stash[BASE_SEED] = workerinput["torchcheck_seed"]  # the controller's, even for 'random'
    else:
        config.stash[BASE_SEED] = option_value(config, "seed")
    option_value(config, "devices")  # validate early
    config.stash[NAN_GUARD_ALL] = option_value(config, "nan_guard")
    config.stash[LINT_ALL] = option_value(config, "lint")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistSeed(), "torchcheck-xdist")


class _XdistSeed:
    """Hands the controller's base seed to every xdist worker."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["torchcheck_seed"] = node.config.stash[BASE_SEED]


def pytest_report_header(config: pytest.Config) -> str:
    from pytest_torchcheck import __version__

    return f"torchcheck: {__version__}, base seed {config.stash[BASE_SEED]}"


# ------------------------------------------------------------------ markers
def _marker_kwargs(item: pytest.Item, name: str) -> dict[str, Any] | None:
    """The validated arguments of the closest ``name`` marker, or None if absent."""
    if name not in our_markers(item):
        return None
    marker = item.get_closest_marker(name)
    if marker is None:
        return None
    signature, _, spec, positional = MARKERS[name]
    where = f"@pytest.mark.{name} on {item.nodeid}"
    if len(marker.args) > len(positional):
        raise _MarkerError(f"{where}: takes at most {len(positional)} positional argument(s), "
                           f"got {len(marker.args)}; signature: {signature}")
    values = {k: default for k, (_, default) in spec.items()}
    for key, value in zip(positional, marker.args):
        values[key] = value
    for key, value in marker.kwargs.items():
        if key not in spec:
            raise _MarkerError(f"{where}: unknown keyword {key!r}; valid keywords: {', '.join(spec)}")
        values[key] = value
    for key, value in values.items():
        types, default = spec[key]
        if value is default and default is None:
            raise _MarkerError(f"{where}: missing required argument {key!r}; signature: {signature}")
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise _MarkerError(f"{where}: {key}={value!r} must be {' or '.join(t.__name__ for t in types)}")
    if name == "requires_cuda" and values["min_devices"] < 1:
        raise _MarkerError(f"{where}: min_devices must be >= 1, got {values['min_devices']}")
    if name == "torchcheck_seed" and not 0 <= values["seed"] < 2**32:
        raise _MarkerError(f"{where}: seed must be in 0..{2**32 - 1}, got {values['seed']}")
    return values


class _MarkerError(Exception):
    pass


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> Any:
    if file_path.suffix == ".py" and parent.config.stash.get(LINT_ALL, False):
        from pytest_torchcheck.lint_items import LintFile

        return LintFile.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "torch_device" in metafunc.fixturenames:
        names = core.devices(metafunc.config).names
        metafunc.parametrize("torch_device", names, indirect=True, ids=list(names))


# ------------------------------------------------------------------- hooks
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    try:
        seed_marker = _marker_kwargs(item, "torchcheck_seed")
        cuda = _marker_kwargs(item, "requires_cuda")
        _marker_kwargs(item, "nan_guard")
    except _MarkerError as e:
        item.stash[MARKER_ERROR] = str(e)
    if MARKER_ERROR in item.stash:  # failed outside the except: no "During handling..." repeat of the message
        pytest.fail(item.stash[MARKER_ERROR], pytrace=False)
    base = seed_marker["seed"] if seed_marker else item.config.stash[BASE_SEED]
    item.stash[ITEM_BASE] = base
    item.stash[ITEM_SEED] = derive_seed(base, item.nodeid)
    seed_everything(item.stash[ITEM_SEED])
    if cuda is not None:
        devices = core.devices(item.config)
        if devices.cuda_count < cuda["min_devices"]:
            # Reported at the test, as skipif markers are, not at this hook.
            raise pytest.skip.Exception(
                f"requires {cuda['min_devices']} CUDA device(s), found {devices.cuda_count} "
                f"({devices.source}; --torchcheck-devices overrides)", _use_item_location=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    guard = None
    marker = _marker_kwargs(item, "nan_guard")
    # --torchcheck-nan-guard guards the tests that can use torch: a suite (or a test run) that never imported
    # torch has nothing to guard, and must not pay for importing it. torch imported only inside a test's body
    # is too late to be guarded this way; a marker or the fixture guards such a test.
    if marker is None and item.config.stash.get(NAN_GUARD_ALL, False) and "torch" in sys.modules:
        marker = {"detect_anomaly": False, "backward": True}
    if marker is not None and "nan_guard" not in getattr(item, "fixturenames", ()):  # the fixture guards itself
        core.import_torch("@pytest.mark.nan_guard")
        from pytest_torchcheck.anomaly import NanGuard

        guard = NanGuard(**marker)
        guard.__enter__()
        item.stash.setdefault(GUARDS, []).append(guard)
    try:
        result = yield
    finally:
        if guard is not None:
            guard.__exit__(None, None, None)
    for g in item.stash.get(GUARDS, []):
        g.check()  # a failure swallowed by the test's own except still fails it
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
    if call.excinfo is not None and not item.config.getoption("fulltrace", False):
        from pytest_torchcheck.tracebacks import hide_library_frames, should_hide

        if should_hide(call.excinfo):
            hide_library_frames(call.excinfo)  # the traceback ends at the user's frame
    report = yield
    if report.failed and call.excinfo is not None and not item.config.getoption("showlocals", False):
        from pytest_torchcheck.tracebacks import fold_long_arguments, should_hide

        if should_hide(call.excinfo):
            fold_long_arguments(report.longrepr)  # the message, not a model's repr, in every frame
    if report.failed and _is_torchcheck_failure(item, call):
        report.sections.append(("torchcheck", core.report_section(item)))
    return report


def _is_torchcheck_failure(item: pytest.Item, call: pytest.CallInfo) -> bool:
    if call.excinfo is not None and isinstance(call.excinfo.value, TorchcheckFailure):
        return True
    if MARKER_ERROR in item.stash:
        return False
    if not our_markers(item).isdisjoint(MARKERS):
        return True
    return bool(_TORCHCHECK_FIXTURES & set(getattr(item, "fixturenames", ())))


def _rerun_flags(config: pytest.Config) -> list[str]:
    return ["--torchcheck-nan-guard"] if option_value(config, "nan_guard") else []


# ----------------------------------------------------------------- fixtures
@pytest.fixture
def torch_seed(request: pytest.FixtureRequest) -> int:
    """The test's seed; torch, random and NumPy are seeded with it."""
    seed = request.node.stash.get(ITEM_SEED, derive_seed(request.config.stash[BASE_SEED], request.node.nodeid))
    core.import_torch("the torch_seed fixture")
    seed_everything(seed, import_torch=True)
    return seed


@pytest.fixture
def torch_device(request: pytest.FixtureRequest) -> Any:
    """A ``torch.device``; the test runs once per device present (cpu, cuda, mps)."""
    torch = core.import_torch("the torch_device fixture")

    name = getattr(request, "param", "cpu")
    return torch.device(name)


@pytest.fixture
def nan_guard(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A NanGuard installed for the whole test (``guard.watch(model)`` sets the naming root)."""
    core.import_torch("the nan_guard fixture")
    from pytest_torchcheck.anomaly import NanGuard

    options = _marker_kwargs(request.node, "nan_guard") or {}
    guard = NanGuard(**options)
    guard.__enter__()
    request.node.stash.setdefault(GUARDS, []).append(guard)
    try:
        yield guard
    finally:
        guard.__exit__(None, None, None)
