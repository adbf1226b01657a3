"""Each budget key is one declaration in budgets/spec.py: parsing, unit, instrument, check and the marker's
signature all follow from it."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_torchcheck.budgets import spec, units


def test_every_limit_names_an_instrument_and_a_check_that_exist():
    from pytest_torchcheck.budgets import measure, report

    for key, declared in spec.LIMITS.items():
        assert declared.instrument in measure.INSTRUMENTS, key
        assert declared.check in report.CHECKS, key
        assert declared.unit in ("bytes", "seconds", "count", "flops"), key
    # Nothing measured or checked that no key asks for.
    assert {k.instrument for k in spec.LIMITS.values()} == measure.INSTRUMENTS
    assert {k.check for k in spec.LIMITS.values()} == set(report.CHECKS)
    assert not any(k.instrument or k.check for k in spec.SETTINGS.values())


def test_the_signature_is_derived_from_the_declarations(monkeypatch):
    assert spec.SIGNATURE == spec.signature()
    assert spec.SIGNATURE.startswith("budget(*, cpu_memory=, cuda_memory=, cuda_reserved=, memory_growth=, ")
    assert spec.SIGNATURE.endswith("time=, warmup=0, repeats=5, tolerance=, name=)")
    key = spec.Key(units.parse_count, units.COUNT_HELP, "count", "ATen calls, by another name",
                   instrument="ops", check="ops")
    monkeypatch.setitem(spec.KEYS, "aten_calls", key)
    assert spec.signature().endswith(", name=, aten_calls=)")  # a declared key is in the signature


def test_settings_defaults_come_from_their_declarations():
    assert {f.name for f in dataclasses.fields(spec.Budget)} == {"limits", "sources", *spec.SETTINGS}
    empty = spec.build([])
    assert (empty.warmup, empty.repeats, empty.tolerance, empty.name) == (0, 5, None, None)
    assert empty == spec.Budget() and spec.DEFAULT_REPEATS == 5


def test_derived_key_sets():
    assert spec.CUDA_KEYS == {"cuda_memory", "cuda_reserved"}
    assert spec.HOST_MEMORY_KEYS == {"cpu_memory", "memory_growth"}
    assert spec.REPEATED == {"warmup", "time", "memory_growth"}
    assert spec.instruments({"graph_breaks", "recompiles", "time"}) == {"compile", "timer"}
    assert spec.Budget(limits={"time": 1.0}).needs_repeats and not spec.Budget(limits={"syncs": 0}).needs_repeats


def test_a_key_added_in_one_place_is_parsed_measured_and_checked(monkeypatch):
    """A new key reusing an instrument and a check: one declaration, and the whole path serves it."""
    from pytest_torchcheck.budgets import measure, report
    from pytest_torchcheck.errors import TorchcheckFailure

    import torch

    key = spec.Key(units.parse_count, units.COUNT_HELP, "count", "ATen calls, by another name",
                   instrument="ops", check="ops")
    monkeypatch.setitem(spec.LIMITS, "aten_calls", key)
    monkeypatch.setitem(spec.KEYS, "aten_calls", key)
    budget = spec.build([(spec.parse_spec_string("aten_calls=1k", "--torchcheck-budget"), "--torchcheck-budget"),
                         (spec.parse_values({"aten_calls": 2}, "@pytest.mark.budget"), "@pytest.mark.budget")])
    assert budget.limits == {"aten_calls": 2} and budget.sources["aten_calls"] == "@pytest.mark.budget"
    x = torch.ones(3)
    m = measure.measure_function(lambda: (x + 1) * 2 - 3, set(budget.limits), 0, 1, False)
    assert sum(m.ops.values()) == 3
    where = report.Where("test_x", "step", None, "cpu")
    with pytest.raises(TorchcheckFailure) as failure:
        report.check(budget, m, where)
    message = str(failure.value)
    assert message.startswith("budget exceeded: aten_calls 3 > limit 2 in region 'step' of test_x")
    assert "aten_calls was set by @pytest.mark.budget" in message


def test_the_guide_documents_every_key():
    import re
    from pathlib import Path

    guide = Path(__file__).resolve().parents[2] / "docs" / "plugin" / "budgets.md"
    rows = [line.split("|")[1] for line in guide.read_text().splitlines() if line.startswith("| `")]
    documented = {name for cell in rows for name in re.findall(r"`(\w+)`", cell)}
    assert documented == set(spec.KEYS)


def test_keys_sharing_a_check_differ_only_by_their_declaration(monkeypatch):
    """cuda_memory and cuda_reserved share a check, graph_breaks and recompiles another: what each
    compares and how it words a failure come from its declaration, so a third key of either kind
    is one entry (here a CUDA key that reads the reserved peaks, checked without CUDA)."""
    from pytest_torchcheck.budgets import report
    from pytest_torchcheck.budgets.measure import Measurement

    m = Measurement(cuda_allocated={0: 10 << 20}, cuda_reserved={0: 64 << 20, 1: 8 << 20})
    allocated = report.violations(spec.Budget(limits={"cuda_memory": 32 << 20}), m)
    assert allocated == []  # 10 MiB allocated is under the limit
    reserved = report.violations(spec.Budget(limits={"cuda_reserved": 32 << 20}), m)
    assert [v.key for v in reserved] == ["cuda_reserved"]
    assert "peak reserved" in reserved[0].lines[0] and "cuda:0: 64.00 MiB  <- over" in "\n".join(reserved[0].lines)
    key = spec.Key(units.parse_size, units.SIZE_HELP, "bytes", "reserved, by another name",
                   instrument="cuda_peaks", check="cuda_memory", needs="cuda", reads="cuda_reserved",
                   noun="reserved at the peak", hint="the caching allocator keeps freed blocks")
    monkeypatch.setitem(spec.LIMITS, "cuda_pool", key)
    monkeypatch.setitem(spec.KEYS, "cuda_pool", key)  # as spec builds KEYS from LIMITS at import
    (v,) = report.violations(spec.Budget(limits={"cuda_pool": 32 << 20}), m)
    assert v.key == "cuda_pool" and v.lines[0].startswith("cuda_pool: reserved at the peak, limit 32")
    assert v.lines[-1] == "  likely cause: the caching allocator keeps freed blocks"


def test_keys_that_share_a_check_declare_what_it_reads():
    from pytest_torchcheck.budgets import measure

    for name, declared in spec.LIMITS.items():
        if [k.check for k in spec.LIMITS.values()].count(declared.check) > 1:
            assert declared.reads and declared.noun and declared.hint, name
            if declared.check == "cuda_memory":
                assert declared.reads in {f.name for f in dataclasses.fields(measure.Measurement)}, name
            else:
                assert hasattr(measure.CompileWatcher, declared.reads), name
