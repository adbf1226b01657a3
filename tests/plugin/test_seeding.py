"""Per-test seeds: derived from the base seed and the test id, with marker > CLI > env > ini > default."""

from __future__ import annotations

from tests.plugin.conftest import refuse_import

import json
import random
import re

import pytest

from pytest_torchcheck.seeding import derive_seed

# Records what the RNGs hold when the test body starts; no torch import: the cheap runs.
RECORD_RANDOM = """
import os
import random

import pytest


{marker}
def test_value():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"value-{{worker}}.txt", "w") as f:
        f.write(repr(random.random()))
"""

RECORD_TORCH = """
import json
import random

import torch

try:
    import numpy
except ImportError:  # NumPy is optional: the plugin seeds it only when present
    numpy = None


def record(name, fixture_seed=None):
    values = {
        "initial_seed": torch.initial_seed(),
        "fixture_seed": fixture_seed,
        "torch": torch.rand(3).tolist(),
        "random": random.random(),
        "numpy": None if numpy is None else float(numpy.random.rand()),
    }
    with open(f"{name}.json", "w") as f:
        json.dump(values, f)


def test_a():
    record("a")


def test_b(torch_seed):
    record("b", torch_seed)
"""


def _expected_random(base: int, nodeid: str) -> str:
    return repr(random.Random(derive_seed(base, nodeid)).random())


def _header_seed(result: pytest.RunResult) -> int:
    result.stdout.fnmatch_lines(["torchcheck: *, base seed *"])
    (line,) = [line for line in result.outlines if line.startswith("torchcheck: ")]
    return int(re.fullmatch(r"torchcheck: \S+, base seed (\d+)", line).group(1))


def _record_torch(inner, *args: str) -> dict:
    result = inner.run(*args)
    assert inner.outcomes(result) == {"test_a": "PASSED", "test_b": "PASSED"}
    return {name: json.loads(inner.read(f"{name}.json")) for name in ("a", "b")}


def test_torch_random_numpy_are_seeded_from_base_seed_and_test_id(pytester, inner):
    pytester.makepyfile(test_seeded=RECORD_TORCH)
    first = _record_torch(inner)
    again = _record_torch(inner)

    assert first == again  # same test id, same base seed: the same numbers in every run
    for name in ("a", "b"):
        seed = derive_seed(0, f"test_seeded.py::test_{name}")
        assert first[name]["initial_seed"] == seed  # torch.manual_seed(seed) ran before the test
        assert first[name]["random"] == random.Random(seed).random()
    for rng in ("initial_seed", "torch", "random", "numpy"):
        if first["a"][rng] is not None:
            assert first["a"][rng] != first["b"][rng], rng  # different test ids, different streams
    assert first["b"]["fixture_seed"] == first["b"]["initial_seed"]  # torch_seed is the seed in use


@pytest.mark.parametrize(
    ("args", "env", "ini", "marker", "header", "used"),
    [
        pytest.param((), None, None, None, 0, 0, id="default"),
        pytest.param(("--torchcheck-seed", "5"), None, None, None, 5, 5, id="cli"),
        pytest.param((), None, 7, None, 7, 7, id="ini"),
        pytest.param((), "8", 7, None, 8, 8, id="env-over-ini"),
        pytest.param(("--torchcheck-seed", "9"), "8", 7, None, 9, 9, id="cli-over-env"),
        pytest.param(("--torchcheck-seed=9",), "8", 7, 10, 9, 10, id="marker-over-cli"),
    ],
)
def test_seed_precedence(pytester, inner, monkeypatch, args, env, ini, marker, header, used):
    marker_line = f"@pytest.mark.torchcheck_seed({marker})" if marker is not None else ""
    pytester.makepyfile(test_prec=RECORD_RANDOM.format(marker=marker_line))
    if ini is not None:
        pytester.makeini(f"[pytest]\ntorchcheck_seed = {ini}\n")
    if env is not None:
        monkeypatch.setenv("TORCHCHECK_SEED", env)
    result = inner.run(*args)
    assert inner.outcomes(result) == {"test_value": "PASSED"}
    assert _header_seed(result) == header  # the session's base seed
    assert inner.read("value-main.txt") == _expected_random(used, "test_prec.py::test_value")


def test_random_seed_is_drawn_per_session_and_shown_in_header(pytester, inner):
    pytester.makepyfile(test_rand=RECORD_RANDOM.format(marker=""))
    seeds = []
    for _ in range(2):
        result = inner.run("--torchcheck-seed=random")
        assert inner.outcomes(result) == {"test_value": "PASSED"}
        seeds.append(_header_seed(result))
        # The header names the seed that was really used, so a run can be reproduced from its log.
        assert inner.read("value-main.txt") == _expected_random(seeds[-1], "test_rand.py::test_value")
    assert seeds[0] != seeds[1]


def test_xdist_workers_share_the_controllers_random_seed(pytester, inner):
    pytester.makepyfile(test_dist=RECORD_RANDOM.format(marker=""))
    # --dist each: both workers run the same test; each would draw its own seed if it parsed 'random' itself.
    result = inner.run("-p", "xdist", "-n", "2", "--dist", "each", "--torchcheck-seed=random")
    result.assert_outcomes(passed=2)
    base = _header_seed(result)
    expected = _expected_random(base, "test_dist.py::test_value")
    assert inner.read("value-gw0.txt") == expected
    assert inner.read("value-gw1.txt") == expected


@pytest.mark.parametrize(
    ("args", "env", "ini", "error"),
    [
        pytest.param(("--torchcheck-seed", "abc"), None, None,
                     "ERROR: --torchcheck-seed: expected an integer seed or 'random', got 'abc'", id="cli"),
        pytest.param(("--torchcheck-seed=4294967296",), None, None,
                     "ERROR: --torchcheck-seed: seed must be in 0..4294967295, got 4294967296", id="cli-range"),
        pytest.param((), "1e3", None,
                     "ERROR: environment variable TORCHCHECK_SEED: expected an integer seed or 'random', got '1e3'",
                     id="env"),
        pytest.param((), None, "-1",
                     "ERROR: ini option torchcheck_seed in */tox.ini: seed must be in 0..4294967295, got -1",
                     id="ini"),
        pytest.param((), None, "seven",
                     "ERROR: ini option torchcheck_seed in */tox.ini: expected an integer seed or 'random', "
                     "got 'seven'", id="ini-text"),
    ],
)
def test_bad_seed_is_usage_error_naming_source_and_value(pytester, inner, monkeypatch, args, env, ini, error):
    pytester.makepyfile(test_never="def test_never():\n    open('ran.txt', 'w').close()\n")
    if ini is not None:
        pytester.makeini(f"[pytest]\ntorchcheck_seed = {ini}\n")
    if env is not None:
        monkeypatch.setenv("TORCHCHECK_SEED", env)
    inner.assert_usage_error(inner.run(*args), error)
    assert not (pytester.path / "ran.txt").exists()


NO_TORCH_TESTS = '''
import pytest


def test_seed(torch_seed):
    pass


def test_guard(nan_guard):
    pass


@pytest.mark.nan_guard
def test_marker():
    pass


def test_plain():
    pass
'''


def test_torch_fixtures_without_torch_say_what_to_install(pytester, inner):
    pytester.makeconftest(refuse_import("torch"))  # a linter-only install
    pytester.makepyfile(test_no_torch=NO_TORCH_TESTS)
    result = inner.run("--torchcheck-nan-guard")
    assert inner.outcomes(result) == {"test_seed": "ERROR", "test_guard": "ERROR", "test_marker": "FAILED",
                                      "test_plain": "PASSED"}, result.stdout.str()
    for user, test in [("the torch_seed fixture", "ERROR test_no_torch.py::test_seed"),
                       ("the nan_guard fixture", "ERROR test_no_torch.py::test_guard"),
                       ("@pytest.mark.nan_guard", "FAILED test_no_torch.py::test_marker")]:
        result.stdout.fnmatch_lines([f"{test} - Failed: {user} needs the module 'torch', which is not installed *; "
                                     'install the pytest plugin\'s extra: *-m pip install "torch>=2.2"*'])
    text = result.stdout.str()
    assert "ModuleNotFoundError" not in text and "seeding.py" not in text and "Traceback" not in text
