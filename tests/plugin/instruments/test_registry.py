"""The instrument protocol and its registry: every module of the package is found, instruments are picked
by name and scope in their declared order, and a new instrument is one module that a budget picks up."""

from __future__ import annotations

import textwrap

import pytest

from pytest_torchcheck.instruments import base, registry


def test_every_instrument_module_registers_under_the_name_its_keys_give():
    from pytest_torchcheck.budgets import measure, spec

    found = registry.load()
    assert {cls.__module__.rsplit(".", 1)[1] for cls in found.values()} >= {
        "allocator", "compile", "cuda_peaks", "flops", "held_memory", "ops", "syncs", "timer"}
    assert {k.instrument for k in spec.LIMITS.values()} <= set(found) and measure.INSTRUMENTS <= set(found)
    for name, cls in found.items():
        assert cls.NAME == name and cls.WHAT and cls.SCOPE in base.SCOPES, name


def test_select_orders_by_scope_then_declared_order():
    everything = frozenset(registry.load())
    # Dispatch and function modes stack: flops outermost, the sync counter innermost, as before the split.
    assert [c.NAME for c in registry.select(everything, base.RUN)] == [
        "flops", "cuda_peaks", "cpu_memory", "ops", "syncs"]
    assert [c.NAME for c in registry.select(everything, base.REGION)] == ["compile"]
    # The memory reading wraps the timed run, so its collection is not timed.
    assert [c.NAME for c in registry.select(everything, base.REPEATS)] == ["held_memory", "timer"]
    assert registry.select(frozenset({"syncs"}), base.REPEATS) == []


def test_register_refuses_a_nameless_or_taken_instrument(monkeypatch):
    monkeypatch.setattr(base, "REGISTRY", dict(base.REGISTRY))

    class Nameless(base.Instrument):
        pass

    with pytest.raises(ValueError, match="NAME must be set"):
        base.register(Nameless)

    class Other(base.Instrument):
        NAME = "syncs"

    with pytest.raises(ValueError, match="'syncs' is taken by pytest_torchcheck.instruments.syncs.Syncs"):
        base.register(Other)
    with pytest.raises(LookupError, match="no instrument 'nope' is registered; registered: .*syncs"):
        registry.get("nope")


INSTRUMENT = '''
"""Counts torch.ones calls: a whole instrument in one module."""

import torch
from torch.overrides import TorchFunctionMode

from pytest_torchcheck.instruments.base import Instrument, register


class _Count(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.ones:
            self.n += 1
        return func(*args, **(kwargs or {}))


@register
class OnesCalls(Instrument):
    NAME = "ones_calls"
    WHAT = "torch.ones calls"

    def start(self):
        self.mode = _Count()
        self.mode.__enter__()

    def stop(self):
        self.mode.__exit__(None, None, None)

    def fill(self, m):
        m.values[self.NAME] = self.mode.n

    @classmethod
    def check(cls, key, m, limit):
        n = m.values[cls.NAME]
        if n <= limit:
            return None
        return f"{key} {n} > limit {limit}", [f"{key}: {n} torch.ones call(s), limit {limit}"]
'''

CONFTEST = '''
import ones_calls  # the new instrument: one module
from pytest_torchcheck.budgets import spec, units

spec.LIMITS["ones"] = spec.KEYS["ones"] = spec.Key(
    units.parse_count, units.COUNT_HELP, "count", "torch.ones calls", instrument="ones_calls")
'''

TESTS = '''
import pytest
import torch


@pytest.mark.budget(ones=1)
def test_marker_over():
    torch.ones(2) + torch.ones(2)


@pytest.mark.budget(ones=2, syncs=0)
def test_marker_within():
    torch.ones(2) + torch.ones(2)


def test_fixture_block(budget):
    with budget(ones=0):
        torch.zeros(2)
    with budget(ones=0):
        torch.ones(1)
'''


def test_a_new_instrument_is_one_module_that_a_budget_picks_up(inner):
    inner.pytester.makepyfile(ones_calls=textwrap.dedent(INSTRUMENT), conftest=textwrap.dedent(CONFTEST),
                              test_ones=textwrap.dedent(TESTS))
    result = inner.run()
    assert inner.outcomes(result) == {"test_marker_over": "FAILED", "test_marker_within": "PASSED",
                                      "test_fixture_block": "FAILED"}
    inner.message(result, "test_marker_over").fnmatch_lines([
        "*TorchcheckFailure: budget exceeded: ones 2 > limit 1 in region * of test_ones.py::test_marker_over*",
        "  ones: 2 torch.ones call(s), limit 1",
        "  to change a limit, edit it where it was set (ones was set by @pytest.mark.budget*"])
    inner.message(result, "test_fixture_block").fnmatch_lines(["*budget exceeded: ones 1 > limit 0 in region*"])
