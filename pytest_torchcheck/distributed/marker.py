"""The ``distributed`` marker: its signature, its ini defaults and its validation; imports no torch.

Shared by the pytest-process hooks (``plugin.py``) and the torchrun/SLURM session (``torchrun.py``), which
import it and not each other.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_torchcheck.core import Marker, ini_source, parse_bool

SIGNATURE = "distributed(world_size=2, backend='gloo', timeout=60, isolate=False)"
MARKER_HELP = ("run the test in every rank of a real torch.distributed process group (fixtures rank, world_size, "
               "process_group, rank_device, tmp_path per rank); passes only if every rank passes")
BACKENDS = ("gloo", "nccl")
TIMEOUT_INI = "torchcheck_distributed_timeout"
TIMEOUT_HELP = "default per-test deadline, in seconds, of @pytest.mark.distributed tests (default 60)"
ISOLATE_INI = "torchcheck_distributed_isolate"
ISOLATE_HELP = ("run every distributed test in fresh rank processes forked from the preloaded zygote instead of "
                "the warm pool (default false)")

MARKER = Marker("distributed", SIGNATURE, MARKER_HELP)

PROBLEM = pytest.StashKey[tuple]()  # ("fail" | "skip", message): raised at setup instead of running in ranks
DEFAULTS = pytest.StashKey[tuple]()  # (timeout, isolate) from ini


def ini_defaults(config: pytest.Config) -> tuple[float, bool]:
    """(timeout, isolate) from the ini file, validated."""
    return _ini_timeout(config), _ini_isolate(config)


def _ini_timeout(config: pytest.Config) -> float:
    raw = str(config.getini(TIMEOUT_INI)).strip()
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise pytest.UsageError(f"{ini_source(config, TIMEOUT_INI)}: expected a positive number of seconds, "
                                f"got {raw!r}")
    return value


def _ini_isolate(config: pytest.Config) -> bool:
    return parse_bool(str(config.getini(ISOLATE_INI)).strip(), ini_source(config, ISOLATE_INI))


class MarkerError(Exception):
    pass


def marker_spec(item: pytest.Item) -> dict[str, Any] | None:
    """The validated arguments of the ``distributed`` marker, or None if the test has none."""
    marker = item.get_closest_marker("distributed")
    if marker is None:
        return None
    where = f"@pytest.mark.distributed on {item.nodeid}"
    timeout, isolate = item.config.stash[DEFAULTS]
    values: dict[str, Any] = {"world_size": 2, "backend": "gloo", "timeout": timeout, "isolate": isolate}
    if len(marker.args) > 1:
        raise MarkerError(f"{where}: takes at most 1 positional argument (world_size), got {len(marker.args)}; "
                          f"signature: {SIGNATURE}")
    given = dict(zip(("world_size",), marker.args))
    for key, value in marker.kwargs.items():
        if key not in values:
            raise MarkerError(f"{where}: unknown keyword {key!r}; valid keywords: {', '.join(values)}")
        given[key] = value
    values.update(given)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "world_size" in callspec.params:
        if "world_size" in given and given["world_size"] != callspec.params["world_size"]:
            raise MarkerError(f"{where}: world_size={given['world_size']!r} conflicts with the parametrized "
                              f"world_size={callspec.params['world_size']!r}; give it in one place")
        values["world_size"] = callspec.params["world_size"]
    ws = values["world_size"]
    if not isinstance(ws, int) or isinstance(ws, bool) or ws < 1:
        raise MarkerError(f"{where}: world_size={ws!r} must be an integer >= 1")
    if values["backend"] not in BACKENDS:
        raise MarkerError(f"{where}: backend={values['backend']!r} is not supported; use one of "
                          f"{', '.join(map(repr, BACKENDS))}")
    t = values["timeout"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or t == float("inf"):
        raise MarkerError(f"{where}: timeout={t!r} must be a positive number of seconds")
    if not isinstance(values["isolate"], bool):
        raise MarkerError(f"{where}: isolate={values['isolate']!r} must be True or False")
    return values


def spec_or_problem(item: pytest.Item) -> dict[str, Any] | None:
    """The marker's arguments for a distributed test that can run; None for any other test, or (with the
    reason stashed for ``pytest_runtest_setup`` to raise) for one whose marker is wrong."""
    if item.get_closest_marker("distributed") is None:
        return None
    try:
        return marker_spec(item)
    except MarkerError as e:
        item.stash[PROBLEM] = ("fail", str(e))
        return None
