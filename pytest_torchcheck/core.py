"""What the plugin and its sub-plugins share: options, stash keys, the marker registry, devices, the report section.

``plugin.py`` (the ``pytest11`` entry point), ``distributed/plugin.py`` and ``budgets/plugin.py`` import from
here and never from each other (as pytest-xdist's plugins share ``newhooks``/``workermanage``). Loading this
module imports neither torch nor CUDA.

Option precedence: marker > command line > environment > ini > default.
"""

from __future__ import annotations

import os
import random
import sys
from typing import Any, Callable, NamedTuple

import pytest

from pytest_torchcheck.seeding import derive_seed

GROUP = "torchcheck"
GROUP_HELP = "torchcheck: checks for PyTorch training code"


# ------------------------------------------------------------------ options
class Option(NamedTuple):
    """A ``--torchcheck-*`` flag and its ini and environment twins, sharing one help text."""

    name: str  # ini key; the flag is --torchcheck-<name> with dashes
    help: str
    env: str
    parse: Callable[[str, str], Any]  # (raw value, where it came from) -> value; raises a usage error
    default: str
    flag_kwargs: dict

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def add_options(parser: pytest.Parser, options: dict[str, Option], *, default_in_ini_help: bool = False) -> None:
    """Register each option's flag (help names its env and ini twins) and its ini key."""
    group = parser.getgroup(GROUP, GROUP_HELP)
    for opt in options.values():
        group.addoption(opt.flag, dest=opt.name, default=None, help=f"{opt.help} [env {opt.env}, ini {opt.name}]",
                        **opt.flag_kwargs)
        if default_in_ini_help:
            parser.addini(opt.name, f"{opt.help} (default: {opt.default or 'none'})", default="")
        else:
            parser.addini(opt.name, opt.help, default=opt.default)


def ini_source(config: pytest.Config, key: str) -> str:
    """How an error names an ini key: with the ini file when there is one."""
    return f"ini option {key} in {config.inipath}" if config.inipath else f"ini option {key}"


def option_sources(config: pytest.Config, opt: Option) -> list[tuple[str, str]]:
    """(raw value, source) from ini, environment and command line that are set, lowest precedence first."""
    found = []
    ini = config.getini(opt.name)
    if ini is not None and str(ini).strip() != "":
        found.append((str(ini), ini_source(config, opt.name)))
    env = os.environ.get(opt.env)
    if env:
        found.append((env, f"environment variable {opt.env}"))
    cli = config.getoption(opt.name)
    if cli is not None:
        found.append((cli, opt.flag))
    return found


def option_value(config: pytest.Config, opt: Option) -> Any:
    """Command line > environment > ini > default, parsed, with the source named on error."""
    cli = config.getoption(opt.name)
    if cli is not None:
        return opt.parse(cli, opt.flag)
    env = os.environ.get(opt.env)
    if env is not None and env != "":
        return opt.parse(env, f"environment variable {opt.env}")
    ini = config.getini(opt.name)
    return opt.parse(ini if ini is not None else opt.default, ini_source(config, opt.name))


def parse_bool(value: str, source: str) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(f"{source}: expected true or false, got {value!r}")


def parse_seed(value: str, source: str) -> int:
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


def parse_devices(value: str, source: str) -> tuple[str, ...] | None:
    if value == "":
        return None
    from pytest_torchcheck.devices import parse_devices as parse
    from pytest_torchcheck.errors import TorchcheckUsageError

    try:
        return parse(value, source)
    except TorchcheckUsageError as e:
        raise pytest.UsageError(str(e)) from None


SEED_HELP = "base seed: each test is seeded from it and its test id (an integer, or 'random'; default 0)"
DEVICES_HELP = "devices torch_device runs on, e.g. 'cpu,cuda' (default: detected in a subprocess)"

# The options every part reads (the seed and devices reach the ranks and the rerun command); the main plugin
# registers them with its own.
SEED = Option("torchcheck_seed", SEED_HELP, "TORCHCHECK_SEED", parse_seed, "0", {"metavar": "N"})
DEVICES_OPTION = Option("torchcheck_devices", DEVICES_HELP, "TORCHCHECK_DEVICES", parse_devices, "",
                        {"metavar": "LIST"})


# --------------------------------------------------------------- stash keys
BASE_SEED = pytest.StashKey[int]()  # config: the session's base seed (the xdist controller's on workers)
ITEM_BASE = pytest.StashKey[int]()  # item: the base seed it ran with (a torchcheck_seed marker's, or BASE_SEED)
ITEM_SEED = pytest.StashKey[int]()  # item: the seed derived from ITEM_BASE and its node id
DEVICES = pytest.StashKey[Any]()  # config: the Devices found (lazily, in a subprocess)
RERUN_FLAGS = pytest.StashKey[list]()  # config: callables adding effective option values to the rerun command
_MARKERS = pytest.StashKey[dict]()  # config: the marker registry
_MARKER_NAMES = pytest.StashKey[frozenset]()
_ITEM_MARKERS = pytest.StashKey[frozenset]()


# ------------------------------------------------------------------ markers
class Marker(NamedTuple):
    """A marker torchcheck reads; ``signature: help`` is its ``pytest --markers`` line."""

    name: str
    signature: str
    help: str


def register_markers(config: pytest.Config, *markers: Marker) -> None:
    """Document ``markers`` in ``pytest --markers`` and make ``our_markers`` see them (call in pytest_configure)."""
    registry = config.stash.setdefault(_MARKERS, {})
    for marker in markers:
        if marker.name in registry:
            raise ValueError(f"torchcheck marker {marker.name!r} is registered twice")
        registry[marker.name] = marker
        config.addinivalue_line("markers", f"{marker.signature}: {marker.help}")
    config.stash[_MARKER_NAMES] = frozenset(registry)


def our_markers(item: pytest.Item) -> frozenset[str]:
    """Which of torchcheck's registered markers ``item`` carries (most tests carry none), walked once per item.

    The walk reads each node's ``own_markers`` up the parent chain, as ``iter_markers`` does, without
    its generators: it runs for every test of every suite that has the plugin installed.
    """
    found = item.stash.get(_ITEM_MARKERS, None)
    if found is None:
        ours = item.config.stash.get(_MARKER_NAMES, frozenset())
        names = []
        node: Any = item
        while node is not None:
            for mark in node.own_markers:
                if mark.name in ours:
                    names.append(mark.name)
            node = node.parent
        found = item.stash[_ITEM_MARKERS] = frozenset(names)
    return found


# -------------------------------------------------------------------- torch
def plugin_extra() -> str:
    """The install command for the ``plugin`` extra's needs (one place: :mod:`lint_rules.install`)."""
    from lint_rules.install import extra_hint

    return extra_hint("plugin")


def import_torch(user: str) -> Any:
    """torch; without it, ``user`` (``the torch_seed fixture``) fails with a message, not a traceback.

    The linter installs without torch, and the plugin loads without it: the first fixture or marker that
    needs torch is where a linter-only install finds out, and the message says what to install.
    """
    __tracebackhide__ = True
    try:
        import torch
    except ModuleNotFoundError as e:
        missing = e.name or "torch"
        if missing.split(".")[0] != "torch":
            raise  # torch is there but broken (a module it imports is missing): its own error says more
        pytest.fail(f"{user} needs the module {missing!r}, which is not installed (torch is not part of the "
                    f"linter-only install); install the pytest plugin's extra: {plugin_extra()}", pytrace=False)
    return torch


# ------------------------------------------------------------------ devices
def devices(config: pytest.Config) -> Any:
    """The session's ``Devices``: the --torchcheck-devices list, or found in a subprocess (CUDA stays untouched)."""
    if DEVICES not in config.stash:
        from pytest_torchcheck.devices import detect

        config.stash[DEVICES] = detect(option_value(config, DEVICES_OPTION), DEVICES_OPTION.flag)
    return config.stash[DEVICES]


# ----------------------------------------------------------- report section
def add_rerun_flags(config: pytest.Config, flags: Callable[[pytest.Config], list[str]]) -> None:
    """Let a plugin add effective option values to the rerun command (call in pytest_configure)."""
    config.stash.setdefault(RERUN_FLAGS, []).append(flags)


def rerun_command(item: pytest.Item) -> str:
    """A paste-ready command that reruns ``item`` with the seed and options it ran with."""
    import shlex

    config = item.config
    base = item.stash.get(ITEM_BASE, config.stash[BASE_SEED])
    args = ["python", "-m", "pytest", item.nodeid, f"--torchcheck-seed={base}"]
    # Effective values, not just flags: a failure found under an env/ini setting must reproduce without it.
    found = option_value(config, DEVICES_OPTION)
    if found:
        args.append(f"{DEVICES_OPTION.flag}={','.join(found)}")
    for flags in config.stash.get(RERUN_FLAGS, []):
        args.extend(flags(config))
    return f"cd {shlex.quote(str(config.rootpath))} && {shlex.join(args)}"


def report_section(item: pytest.Item, world_size: int | None = None) -> str:
    """The "torchcheck" report section of a failure: seed, torch version, device, world size, rerun command."""
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
