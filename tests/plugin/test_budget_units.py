"""Budget limits with units, and budget keys: parsing is exact and errors say what is allowed."""

from __future__ import annotations

import pytest

from pytest_torchcheck.budgets import spec, units


@pytest.mark.parametrize("text, expected", [
    ("512MiB", 512 * 2**20), ("1.5GB", 1_500_000_000), ("64 KiB", 65536), ("0B", 0), ("100", 100), (4096, 4096),
    ("2gib", 2 * 2**30), ("1e3KB", 10**6),
])
def test_sizes(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("200ms", 0.2), ("1.5s", 1.5), ("50us", 50e-6), ("2min", 120.0), (0.25, 0.25), ("10ns", 1e-8),
])
def test_times(text, expected):
    assert units.parse_time(text) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    (0, 0), ("1.5G", 1_500_000_000), ("2e9", 2_000_000_000), ("300MFLOP", 300_000_000), ("12", 12), ("4k", 4000),
])
def test_counts(text, expected):
    assert units.parse_count(text) == expected


@pytest.mark.parametrize("parse, bad", [
    (units.parse_size, "12 parsecs"), (units.parse_size, "-1MiB"), (units.parse_size, 1.5), (units.parse_size, True),
    (units.parse_time, "200"), (units.parse_time, "fast"), (units.parse_time, -1),
    (units.parse_count, "lots"), (units.parse_count, -1), (units.parse_count, 1.5), (units.parse_count, None),
])
def test_bad_values_say_what_is_allowed(parse, bad):
    with pytest.raises(units.UnitError, match="^expected "):
        parse(bad)


def test_formatting():
    assert units.format_bytes(256 * 2**20) == "256.00 MiB"
    assert units.format_bytes(512) == "512 B"
    assert units.format_time(0.0123) == "12.300 ms"
    assert units.format_count(2.5e9, "FLOP") == "2.5 GFLOP"


def test_unknown_key_suggests_the_closest():
    with pytest.raises(spec.BudgetUsageError) as e:
        spec.parse_values({"sync": 0}, "here")
    assert str(e.value).startswith("here: unknown budget key 'sync' (did you mean 'syncs'?); valid keys: cpu_memory")


def test_spec_string_and_precedence():
    ini = spec.parse_spec_string("syncs=0, cpu_memory=512MiB warmup=2", "ini")
    marker = spec.parse_values({"syncs": 3}, "marker")
    b = spec.build([(ini, "ini"), (marker, "marker")])
    assert dict(b.limits) == {"syncs": 3, "cpu_memory": 512 * 2**20}
    assert b.warmup == 2 and b.repeats == spec.DEFAULT_REPEATS
    assert b.sources["syncs"] == "marker" and b.sources["cpu_memory"] == "ini"


@pytest.mark.parametrize("text, message", [
    ("syncs", "cannot read 'syncs'"), ("syncs=0 syncs=1", "given twice"), ("time=fast", "time='fast': expected"),
])
def test_bad_spec_strings(text, message):
    with pytest.raises(spec.BudgetUsageError, match=message):
        spec.parse_spec_string(text, "ini option torchcheck_budget")
