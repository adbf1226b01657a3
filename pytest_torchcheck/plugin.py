"""The ``pytest11`` entry point: options, ini keys, markers, fixtures and hooks.

Loading this module imports neither torch nor CUDA: torch is imported inside the
fixtures and hooks of tests that use it, and devices are found in a subprocess.
Option precedence: marker > command line > environment > ini > default.
"""

from __future__ import annotations

import os
import random
import sys
from typing import Any, Callable, Iterator, NamedTuple

import pytest

from pytest_torchcheck.errors import TorchcheckFailure
from pytest_torchcheck.seeding import derive_seed, seed_everything

# Capabilities with hooks of their own are sub-plugins, registered with this one (so ``-p no:torchcheck``
# disables them all). Each one imports no torch at load time.
pytest_plugins = ("pytest_torchcheck.distributed.plugin", "pytest_torchcheck.budgets.plugin")

SEED_HELP = "base seed: each test is seeded from it and its test id (an integer, or 'random'; default 0)"
DEVICES_HELP = "devices torch_device runs on, e.g. 'cpu,cuda' (default: detected in a subprocess)"
LINT_HELP = "lint every collected Python file with torchcheck's static rules (one item per file)"
NAN_GUARD_HELP = "guard every test with nan_guard (fail at the first non-finite module output or gradient)"


class Option(NamedTuple):
    name: str  # ini key; the flag is --torchcheck-<name> with dashes
    help: str
    env: str
    parse: Callable[[str, str], Any]
    default: str
    flag_kwargs: dict


def _parse_seed(value: str, source: str) -> int:
    value = str(value).strip()
    if value.lower() == "random":
        return random.SystemRandom().randrange(2**32)
    try:
        seed = int(value)
    except ValueError:
        raise pytest.UsageError(f"{source}: expected an integer seed or 'random', got {value!r}") from None
    if not 0 <= seed < 2**32:
        raise pytest.UsageError(f"{source}: seed must be in 0..{2**32 - 1}, got {seed}")
    return seed


def _parse_devices(value: str, source: str) -> tuple[str, ...] | None:
    if value == "":
        return None
    from pytest_torchcheck.devices import parse_devices
    from pytest_torchcheck.errors import TorchcheckUsageError

    try:
        return parse_devices(value, source)
    except TorchcheckUsageError as e:
        raise pytest.UsageError(str(e)) from None


def _parse_bool(value: str, source: str) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(f"{source}: expected true or false, got {value!r}")


OPTIONS = {
    "seed": Option("torchcheck_seed", SEED_HELP, "TORCHCHECK_SEED", _parse_seed, "0",
                   {"metavar": "N"}),
    "devices": Option("torchcheck_devices", DEVICES_HELP, "TORCHCHECK_DEVICES", _parse_devices, "",
                      {"metavar": "LIST"}),
    "nan_guard": Option("torchcheck_nan_guard", NAN_GUARD_HELP, "TORCHCHECK_NAN_GUARD", _parse_bool, "false",
                        {"action": "store_const", "const": "true"}),
    "lint": Option("torchcheck_lint", LINT_HELP, "TORCHCHECK_LINT", _parse_bool, "false",
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

BASE_SEED = pytest.StashKey[int]()
DEVICES = pytest.StashKey[Any]()
ITEM_SEED = pytest.StashKey[int]()
ITEM_BASE = pytest.StashKey[int]()
GUARDS = pytest.StashKey[list]()
MARKER_ERROR = pytest.StashKey[str]()
NAN_GUARD_ALL = pytest.StashKey[bool]()
LINT_ALL = pytest.StashKey[bool]()
OUR_MARKERS = pytest.StashKey[frozenset]()

_TORCHCHECK_FIXTURES = frozenset({"torch_seed", "torch_device", "nan_guard"})


# ------------------------------------------------------------------ options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcheck", "torchcheck: checks for PyTorch training code")
    for key, opt in OPTIONS.items():
        flag = "--" + opt.name.replace("_", "-")
        group.addoption(flag, dest=opt.name, default=None, help=f"{opt.help} [env {opt.env}, ini {opt.name}]",
                        **opt.flag_kwargs)
        parser.addini(opt.name, opt.help, default=opt.default)


def option_value(config: pytest.Config, key: str) -> Any:
    """Command line > environment > ini > default, parsed, with the source named on error."""
    opt = OPTIONS[key]
    cli = config.getoption(opt.name)
    if cli is not None:
        return opt.parse(cli, "--" + opt.name.replace("_", "-"))
    env = os.environ.get(opt.env)
    if env is not None and env != "":
        return opt.parse(env, f"environment variable {opt.env}")
    ini = config.getini(opt.name)
    source = f"ini option {opt.name} in {config.inipath}" if config.inipath else f"ini option {opt.name}"
    return opt.parse(ini if ini is not None else opt.default, source)


def pytest_configure(config: pytest.Config) -> None:
    for name, (signature, help_text, _, _) in MARKERS.items():
        config.addinivalue_line("markers", f"{signature}: {help_text}")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "torchcheck_seed" in workerinput:
        config.stash[BASE_SEED] = workerinput["torchcheck_seed"]  # the controller's, even for 'random'
    else:
        config.stash[BASE_SEED] = option_value(config, "seed")
    option_value(config, "devices")  # validate early
    config.stash[NAN_GUARD_ALL] = option_value(config, "nan_guard")
    config.stash[LINT_ALL] = option_value(config, "lint")
    config.addinivalue_line("markers", "torchcheck_lint: a torchcheck static-lint item (--torchcheck-lint)")
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
# Every marker torchcheck reads: this plugin's, the DDP harness's and the budgets'.
OUR_MARKER_NAMES = frozenset(MARKERS) | {"distributed", "budget"}


def our_markers(item: pytest.Item) -> frozenset[str]:
    """Which of torchcheck's markers ``item`` carries (most tests carry none), walked once per item.

    The walk reads each node's ``own_markers`` up the parent chain, as ``iter_markers`` does, without
    its generators: it runs for every test of every suite that has the plugin installed.
    """
    found = item.stash.get(OUR_MARKERS, None)
    if found is None:
        names = []
        node: Any = item
        while node is not None:
            for mark in node.own_markers:
                if mark.name in OUR_MARKER_NAMES:
                    names.append(mark.name)
            node = node.parent
        found = item.stash[OUR_MARKERS] = frozenset(names)
    return found


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


def _devices(config: pytest.Config) -> Any:
    if DEVICES not in config.stash:
        from pytest_torchcheck.devices import detect

        config.stash[DEVICES] = detect(option_value(config, "devices"), "--torchcheck-devices")
    return config.stash[DEVICES]


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> Any:
    if file_path.suffix == ".py" and parent.config.stash.get(LINT_ALL, False):
        from pytest_torchcheck.lint_items import LintFile

        return LintFile.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "torch_device" in metafunc.fixturenames:
        names = _devices(metafunc.config).names
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
        devices = _devices(item.config)
        if devices.cuda_count < cuda["min_devices"]:
            # Reported at the test, as skipif markers are, not at this hook.
            raise pytest.skip.Exception(
                f"requires {cuda['min_devices']} CUDA device(s), found {devices.cuda_count} "
                f"({devices.source}; --torchcheck-devices overrides)", _use_item_location=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    guard = None
    marker = _marker_kwargs(item, "nan_guard")
    if marker is None and item.config.stash.get(NAN_GUARD_ALL, False):
        marker = {"detect_anomaly": False, "backward": True}
    if marker is not None and "nan_guard" not in getattr(item, "fixturenames", ()):  # the fixture guards itself
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
    if report.failed and _is_torchcheck_failure(item, call):
        report.sections.append(("torchcheck", _section(item)))
    return report


def _is_torchcheck_failure(item: pytest.Item, call: pytest.CallInfo) -> bool:
    if call.excinfo is not None and isinstance(call.excinfo.value, TorchcheckFailure):
        return True
    if MARKER_ERROR in item.stash:
        return False
    if not our_markers(item).isdisjoint(MARKERS):
        return True
    return bool(_TORCHCHECK_FIXTURES & set(getattr(item, "fixturenames", ())))


def rerun_command(item: pytest.Item) -> str:
    import shlex

    base = item.stash.get(ITEM_BASE, item.config.stash[BASE_SEED])
    args = ["python", "-m", "pytest", item.nodeid, f"--torchcheck-seed={base}"]
    # Effective values, not just flags: a failure found under an env/ini setting must reproduce without it.
    devices = option_value(item.config, "devices")
    if devices:
        args.append(f"--torchcheck-devices={','.join(devices)}")
    if option_value(item.config, "nan_guard"):
        args.append("--torchcheck-nan-guard")
    return f"cd {shlex.quote(str(item.config.rootpath))} && {shlex.join(args)}"


def _section(item: pytest.Item, world_size: int | None = None) -> str:
    torch = sys.modules.get("torch")
    if torch is not None:
        version = getattr(torch, "__version__", "unknown")
    else:  # e.g. a distributed test, run in rank processes only
        from importlib import metadata

        try:
            version = f"{metadata.version('torch')} (not imported in the pytest process)"
        except metadata.PackageNotFoundError:
            version = "not installed"
    callspec = getattr(item, "callspec", None)
    device = callspec.params.get("torch_device", "cpu") if callspec is not None else "cpu"
    base = item.stash.get(ITEM_BASE, item.config.stash[BASE_SEED])
    seed = item.stash.get(ITEM_SEED, derive_seed(base, item.nodeid))
    world = str(world_size) if world_size is not None else os.environ.get("WORLD_SIZE", "1")
    return (f"seed: {seed} (base seed {base}, test id {item.nodeid})\n"
            f"torch: {version}\n"
            f"device: {device}\n"
            f"world size: {world}\n"
            f"rerun: {rerun_command(item)}")


# ----------------------------------------------------------------- fixtures
@pytest.fixture
def torch_seed(request: pytest.FixtureRequest) -> int:
    """The test's seed; torch, random and NumPy are seeded with it."""
    seed = request.node.stash.get(ITEM_SEED, derive_seed(request.config.stash[BASE_SEED], request.node.nodeid))
    seed_everything(seed, import_torch=True)
    return seed


@pytest.fixture
def torch_device(request: pytest.FixtureRequest) -> Any:
    """A ``torch.device``; the test runs once per device present (cpu, cuda, mps)."""
    import torch

    name = getattr(request, "param", "cpu")
    return torch.device(name)


@pytest.fixture
def nan_guard(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A NanGuard installed for the whole test (``guard.watch(model)`` sets the naming root)."""
    from pytest_torchcheck.anomaly import NanGuard

    options = _marker_kwargs(request.node, "nan_guard") or {}
    guard = NanGuard(**options)
    guard.__enter__()
    request.node.stash.setdefault(GUARDS, []).append(guard)
    try:
        yield guard
    finally:
        guard.__exit__(None, None, None)
