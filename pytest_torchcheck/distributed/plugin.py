"""Hooks of the DDP harness (registered by ``pytest_torchcheck.plugin``); imports no torch.

``@pytest.mark.distributed(world_size=2, backend="gloo", timeout=60, isolate=False)``
runs the test body in every rank of a real ``torch.distributed`` process group.
The pytest process never runs such a test itself and never imports torch for it:
it hands the test to rank processes (``harness.py``), waits with a deadline, and
reports one merged result (``merge.py``). Inside a rank, or in a process started
by torchrun/SLURM, the same test runs as an ordinary pytest item (``torchrun.py``).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_torchcheck import core
from pytest_torchcheck.distributed import ENV_WORKER
from pytest_torchcheck.distributed.marker import (DEFAULTS, ISOLATE_HELP, ISOLATE_INI, MARKER, PROBLEM, TIMEOUT_HELP,
                                                  TIMEOUT_INI, ini_defaults, spec_or_problem)

MODE = pytest.StashKey[str]()  # "parent", "rank" or "torchrun"
HARNESS = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(TIMEOUT_INI, TIMEOUT_HELP, default="60")
    parser.addini(ISOLATE_INI, ISOLATE_HELP, default="false")


@pytest.hookimpl(trylast=True)  # after the terminal reporter exists, which torchrun mode silences on ranks > 0
def pytest_configure(config: pytest.Config) -> None:
    core.register_markers(config, MARKER)
    worker = os.environ.get(ENV_WORKER)
    if worker:
        config.stash[MODE] = "rank"
    else:
        config.stash[MODE] = "torchrun" if launched_by_torchrun() else "parent"
    config.stash[DEFAULTS] = ini_defaults(config)
    if config.stash[MODE] == "torchrun":
        from pytest_torchcheck.distributed.torchrun import TorchrunSession

        session = TorchrunSession(config)
        config.pluginmanager.register(session, "torchcheck-torchrun")
        session.silence(config)


def launched_by_torchrun() -> bool:
    """torchrun, SLURM or another launcher started this pytest process as one rank of a job."""
    env = os.environ
    if env.get(ENV_WORKER):
        return False
    return all(env.get(k) for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def shipping_problem(function: Any) -> str | None:
    """Why a test function cannot be run by rank processes, which import its module and look it up by name."""
    qualname = getattr(function, "__qualname__", "")
    if "<lambda>" in qualname:
        kind = "a lambda"
    elif "<locals>" in qualname:
        kind = "a closure (a function defined inside another function)"
    else:
        return None
    return (f"{kind}, {qualname!r}, cannot be shipped to rank processes: each rank imports the test module "
            f"afresh and looks the test up by its module-level name, and would not see the state the closure "
            f"captured. Define the test with 'def' at module or class level")


def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    # Called for every name in every test module: the common case costs one attribute lookup.
    if "<" not in getattr(obj, "__qualname__", ""):
        return
    if not callable(obj) or not collector.funcnamefilter(name):
        return
    own = getattr(obj, "pytestmark", [])
    own = own if isinstance(own, list) else [own]
    if any(getattr(m, "name", None) == "distributed" for m in own) or \
            any(True for _ in collector.iter_markers("distributed")):  # class, module, package markers
        problem = shipping_problem(obj)
        if problem is not None:
            raise collector.CollectError(f"@pytest.mark.distributed test {name}: {problem}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # The per-test hooks are registered only when a distributed test was collected: a suite without one
    # pays nothing per test.
    if not config.pluginmanager.has_plugin(_RUN_HOOKS) and any("distributed" in core.our_markers(i) for i in items):
        config.pluginmanager.register(_RunHooks(), _RUN_HOOKS)


# ------------------------------------------------------------------- hooks
def _runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if item.config.stash.get(MODE, "parent") != "parent":
        return None
    spec = spec_or_problem(item)
    if spec is None:
        return None
    if not isinstance(item, pytest.Function):
        item.stash[PROBLEM] = ("fail", f"@pytest.mark.distributed on {item.nodeid}: only test functions can run "
                                       f"in rank processes, not {type(item).__name__} items")
        return None
    from pytest_torchcheck.distributed.harness import local_world_size_limit

    limit, why = local_world_size_limit()
    if spec["world_size"] > limit:
        # Refused before any rank starts: past the limit ranks fail to start or to join in time, and the
        # session would spend the whole deadline finding that out.
        item.stash[PROBLEM] = ("fail", f"@pytest.mark.distributed on {item.nodeid}: world_size={spec['world_size']} "
                                       f"is more ranks than this machine can run as local processes: at most "
                                       f"{limit} ({why}); use a smaller world_size, or launch the ranks with "
                                       f"torchrun across machines")
        return None
    if spec["backend"] == "nccl":
        devices = core.devices(item.config)
        if devices.cuda_count < spec["world_size"]:
            item.stash[PROBLEM] = ("skip", f"backend='nccl' with world_size={spec['world_size']} needs "
                                           f"{spec['world_size']} CUDA devices, found {devices.cuda_count} "
                                           f"({devices.source}); use backend='gloo' to run on CPU")
            return None
    from pytest_torchcheck.distributed.runner import run_in_ranks

    run_in_ranks(item, nextitem, spec, _harness(item.config))
    return True


def _runtest_setup(item: pytest.Item) -> None:
    problem = item.stash.get(PROBLEM, None)
    if problem is None:
        return
    kind, message = problem
    if kind == "skip":
        raise pytest.skip.Exception(message, _use_item_location=True)
    pytest.fail(message, pytrace=False)


_RUN_HOOKS = "torchcheck-distributed-runs"


class _RunHooks:
    """The hooks that run around every test, once a distributed test is in the session."""

    pytest_runtest_protocol = staticmethod(pytest.hookimpl(tryfirst=True)(_runtest_protocol))
    pytest_runtest_setup = staticmethod(pytest.hookimpl(tryfirst=True)(_runtest_setup))


def _harness(config: pytest.Config) -> Any:
    if HARNESS not in config.stash:
        from pytest_torchcheck.distributed.harness import Harness
        from pytest_torchcheck.distributed.runner import rank_args

        import sys

        # pytest -s: the ranks' output is shown as it is written, each line marked with its rank.
        live = sys.stdout if config.getoption("capture", "fd") == "no" else None
        config.stash[HARNESS] = Harness(rank_args(config), str(config.invocation_params.dir),
                                        basetemp=_rank_basetemp(config), live=live)
    return config.stash[HARNESS]


def _rank_basetemp(config: pytest.Config) -> Any:
    """``<pytest's basetemp>/torchcheck-ranks``: rank tmp_path folders are kept (and cleaned up) as pytest keeps
    its own; None if the tmp_path plugin is disabled."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return None
    return factory.getbasetemp() / "torchcheck-ranks"


def pytest_unconfigure(config: pytest.Config) -> None:
    harness = config.stash.get(HARNESS, None)
    if harness is not None:
        harness.close()
        del config.stash[HARNESS]


# ----------------------------------------------------------------- fixtures
def _context(request: pytest.FixtureRequest) -> Any:
    from pytest_torchcheck.distributed import context

    if context.CURRENT is None:
        name = request.fixturename
        raise pytest.UsageError(f"the {name!r} fixture of {request.node.nodeid} only exists inside the ranks of a "
                                f"distributed test: mark the test with @pytest.mark.distributed(world_size=...)")
    return context.CURRENT


@pytest.fixture
def rank(request: pytest.FixtureRequest) -> int:
    """This process's rank in the test's process group."""
    return _context(request).rank


@pytest.fixture
def world_size(request: pytest.FixtureRequest) -> int:
    """The number of ranks in the test's process group."""
    return _context(request).world_size


@pytest.fixture
def process_group(request: pytest.FixtureRequest) -> Any:
    """The default process group (``torch.distributed.group.WORLD``), already initialised."""
    return _context(request).group


@pytest.fixture
def rank_device(request: pytest.FixtureRequest) -> Any:
    """This rank's device: ``cuda:<local rank>`` with nccl, ``cpu`` with gloo."""
    import torch

    return torch.device(_context(request).device)

