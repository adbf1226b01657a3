"""Hypothesis strategies for tensors, used in a real @given test under the "torchcheck" profile."""

from __future__ import annotations

from tests.plugin.conftest import refuse_import

STRATEGY_TESTS = """
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_torchcheck.strategies import shapes, tensors

settings.load_profile("torchcheck")
seen = set()


def test_profile_has_no_deadline():
    assert settings().deadline is None


@given(tensors(shape=(2, 3), dtype=torch.float64))
def test_fixed_shape_and_dtype(t):
    assert t.shape == (2, 3) and t.dtype == torch.float64
    assert torch.isfinite(t).all() and t.abs().max() <= 1e3


@given(tensors(shape=shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), dtype=torch.float16))
def test_shape_strategy_and_half(t):
    assert 2 <= t.dim() <= 3 and all(1 <= s <= 4 for s in t.shape)
    assert t.dtype == torch.float16 and torch.isfinite(t).all()


@given(tensors(dtype=torch.int32, elements=st.integers(-5, 5), requires_grad=False))
def test_elements_and_int_dtype(t):
    assert t.dtype == torch.int32
    assert 1 <= t.dim() <= 3 and all(1 <= s <= 8 for s in t.shape)  # the default shapes()
    assert t.min() >= -5 and t.max() <= 5


@given(tensors(shape=(3,), requires_grad=True))
def test_requires_grad_float32_default(t):
    assert t.dtype == torch.float32 and t.requires_grad


@settings(max_examples=200, derandomize=True)
@given(shapes(min_dims=0, max_dims=2, min_side=0, max_side=2))
def test_shapes_bounds(shape):
    assert isinstance(shape, tuple) and len(shape) <= 2 and all(0 <= s <= 2 for s in shape)
    seen.add(len(shape))


def test_shapes_cover_every_rank():
    assert seen == {0, 1, 2}


@settings(derandomize=True)
@given(tensors(shape=(4,), dtype=torch.float32))
def test_a_real_property_is_caught(t):
    assert (t * 0.5).sum() <= 100.0  # false for large enough values: Hypothesis must find one
"""


def test_strategies_in_a_real_given_test(pytester, inner):
    pytester.makepyfile(test_props=STRATEGY_TESTS)
    result = inner.run(hypothesis=True)
    assert inner.outcomes(result) == {
        "test_profile_has_no_deadline": "PASSED",
        "test_fixed_shape_and_dtype": "PASSED",
        "test_shape_strategy_and_half": "PASSED",
        "test_elements_and_int_dtype": "PASSED",
        "test_requires_grad_float32_default": "PASSED",
        "test_shapes_bounds": "PASSED",
        "test_shapes_cover_every_rank": "PASSED",
        "test_a_real_property_is_caught": "FAILED",
    }
    # Hypothesis says "Falsifying example:" (older) or "Failing test case:" (6.16x+).
    result.stdout.fnmatch_lines(["E   F* test_a_real_property_is_caught(", "E       t=tensor(*"])
    assert "HypothesisWarning" not in result.stdout.str()  # e.g. a strategy used where a value was meant


def _declare_hypothesis_entry_point(pytester) -> None:
    """A dist-info beside the inner tests declaring pyproject.toml's own ``hypothesis`` entry point.

    The installed copy's metadata dates from its last ``pip install``; reading the entry point from
    this checkout's pyproject.toml tests what this checkout ships (a second, identical registration
    from an up-to-date install is harmless: registering a profile twice is idempotent).
    """
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    group = pyproject["project"]["entry-points"]["hypothesis"]
    assert group == {"torchcheck": "pytest_torchcheck.hypothesis_profile:register_profile"}
    info = pytester.path / "torchcheck_profile_check-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchcheck-profile-check\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[hypothesis]\n" + "".join(f"{k} = {v}\n" for k, v in group.items()))


PROFILE_TESTS = """
import sys

from hypothesis import settings


def test_profile_loaded_without_importing_torchcheck():
    assert settings().deadline is None
    assert settings.get_current_profile_name() == "torchcheck"
    assert "pytest_torchcheck.strategies" not in sys.modules
"""


def test_profile_loads_from_conftest_before_anything_of_torchcheck(pytester, inner):
    # The conftest is imported before any test module: no "import pytest_torchcheck.strategies" ran.
    _declare_hypothesis_entry_point(pytester)
    pytester.makeconftest("from hypothesis import settings\nsettings.load_profile('torchcheck')\n")
    pytester.makepyfile(test_profile=PROFILE_TESTS)
    result = inner.run(hypothesis=True)
    assert inner.outcomes(result) == {"test_profile_loaded_without_importing_torchcheck": "PASSED"}, \
        result.stdout.str()


def test_profile_loads_from_the_command_line(pytester, inner):
    _declare_hypothesis_entry_point(pytester)
    pytester.makepyfile(test_profile=PROFILE_TESTS)
    result = inner.run("--hypothesis-profile=torchcheck", hypothesis=True)
    assert inner.outcomes(result) == {"test_profile_loaded_without_importing_torchcheck": "PASSED"}, \
        result.stdout.str()


def test_plugin_load_does_not_import_hypothesis(pytester, inner):
    _declare_hypothesis_entry_point(pytester)
    pytester.makepyfile(test_plain="""
import sys

def test_no_hypothesis():
    assert "hypothesis" not in sys.modules
    assert "pytest_torchcheck.hypothesis_profile" not in sys.modules
""")
    result = inner.run(hypothesis=True)  # Hypothesis's own pytest plugin loaded too: it imports lazily
    assert inner.outcomes(result) == {"test_no_hypothesis": "PASSED"}, result.stdout.str()


NO_HYPOTHESIS = refuse_import("hypothesis") + """
try:
    import pytest_torchcheck.strategies
except ModuleNotFoundError as e:
    print(f"{e.name}: {e}")
"""


def test_strategies_without_hypothesis_name_the_extra(pytester):
    script = pytester.makepyfile(no_hypothesis=NO_HYPOTHESIS)
    result = pytester.runpython(script)
    result.stdout.fnmatch_lines(['hypothesis: pytest_torchcheck.strategies needs Hypothesis, which is not '
                                 'installed; install the strategies extra: *-m pip install *hypothesis* '
                                 '(what the `strategies` extra adds; *python -m pip install ".[[]strategies[]]"*'])
