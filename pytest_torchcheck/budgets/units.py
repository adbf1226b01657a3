"""Limits with units: ``"512MiB"``, ``"1.5GB"``, ``"200ms"``, ``"2.5GFLOP"``; parsing and printing.

Pure Python (no torch): the plugin validates marker and ini values with it before a test runs.
"""

from __future__ import annotations

import math
import re

_NUMBER = r"(?P<num>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"

SIZE_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0}
COUNT_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}

_SIZE_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[A-Za-z]*)\s*$")
_TIME_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[a-zµ]*)\s*$")
_COUNT_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[kKmMgGtTpP]?)(?:flops?|FLOPS?|FLOPs?)?\s*$")

SIZE_HELP = "a size in bytes: an integer or a string such as '512MiB', '1.5GB', '64KiB' (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
TIME_HELP = "a duration: seconds as a number, or a string such as '200ms', '1.5s', '50us' (units ns, us, ms, s, min)"
COUNT_HELP = "a non-negative integer, or a string such as '1.5G', '2e9', '300MFLOP' (suffixes K, M, G, T, P)"


class UnitError(ValueError):
    """A value that does not parse; the message says what is allowed (the caller adds where it came from)."""


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _finite_non_negative(x: float, value: object, help_text: str) -> None:
    if not math.isfinite(x) or x < 0:
        raise UnitError(f"expected {help_text}")


def parse_size(value: object) -> int:
    """Bytes, from an integer or a string with a unit (``"1.5GB"`` -> 1500000000)."""
    x = _number(value)
    if x is not None:
        if isinstance(value, float) and not x.is_integer():
            raise UnitError(f"expected {SIZE_HELP} (a bare number is bytes and must be whole)")
        _finite_non_negative(x, value, SIZE_HELP)
        return int(x)
    if not isinstance(value, str):
        raise UnitError(f"expected {SIZE_HELP}, got a {type(value).__name__}")
    m = _SIZE_RE.match(value)
    unit = m.group("unit").lower() if m else None
    if m is None or unit not in SIZE_UNITS:
        raise UnitError(f"expected {SIZE_HELP}")
    x = float(m.group("num")) * SIZE_UNITS[unit]
    _finite_non_negative(x, value, SIZE_HELP)
    return int(round(x))


def parse_time(value: object) -> float:
    """Seconds, from a number or a string with a unit (``"200ms"`` -> 0.2)."""
    x = _number(value)
    if x is not None:
        _finite_non_negative(x, value, TIME_HELP)
        return x
    if not isinstance(value, str):
        raise UnitError(f"expected {TIME_HELP}, got a {type(value).__name__}")
    m = _TIME_RE.match(value)
    unit = m.group("unit") if m else None
    if m is None or unit not in TIME_UNITS:
        raise UnitError(f"expected {TIME_HELP}" + (" (a unit is required in a string)" if m and not unit else ""))
    x = float(m.group("num")) * TIME_UNITS[unit]
    _finite_non_negative(x, value, TIME_HELP)
    return x


def parse_count(value: object) -> int:
    """A count (syncs, ops, FLOPs), from an integer or ``"1.5G"``/``"2e9"``/``"300MFLOP"``."""
    x = _number(value)
    if x is None:
        if not isinstance(value, str):
            raise UnitError(f"expected {COUNT_HELP}, got a {type(value).__name__}")
        m = _COUNT_RE.match(value)
        if m is None:
            raise UnitError(f"expected {COUNT_HELP}")
        x = float(m.group("num")) * COUNT_SUFFIXES[m.group("unit").lower()]
    _finite_non_negative(x, value, COUNT_HELP)
    if not float(x).is_integer():
        raise UnitError(f"expected {COUNT_HELP} (a whole number)")
    return int(x)


def parse_int(value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UnitError(f"expected an integer >= {minimum}")
    try:
        n = int(value)
    except ValueError:
        raise UnitError(f"expected an integer >= {minimum}") from None
    if n < minimum:
        raise UnitError(f"expected an integer >= {minimum}")
    return n


def parse_ratio(value: object) -> float:
    """A tolerance ratio >= 1 (``1.3`` = 30% slower than the baseline is still within)."""
    try:
        x = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or x < 1:
        raise UnitError(f"expected a ratio >= 1 (e.g. 1.3: up to 30% slower than the baseline), got {value!r}")
    return x


def parse_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UnitError("expected a non-empty string")
    return value.strip()


def format_bytes(n: float) -> str:
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{sign}{n / scale:.2f} {unit}"
    return f"{sign}{int(n)} B"


def format_time(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"


def format_count(n: float, unit: str = "") -> str:
    for suffix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {suffix}{unit}".rstrip()
    return f"{int(n)} {unit}".rstrip()
