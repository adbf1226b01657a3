"""What a budget is: its keys, their units, validation, and defaults merged from ini/env/command line.

Pure Python (no torch), so marker arguments and ini values are checked before any test runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

from pytest_torchcheck.budgets import units
from pytest_torchcheck.errors import TorchcheckUsageError


class Key(NamedTuple):
    """One budget key, declared once: how it is parsed, printed, measured, checked and documented.

    Everything else reads these declarations: the parser below, the skips (``needs``), the `with`-block
    restriction (``repeated``), ``budgets.measure`` (``instrument``), ``report.violations`` (``check``),
    the failure messages' units and the marker's signature (:data:`SIGNATURE`). A new key that an
    existing instrument reads and an existing check compares is one entry here; a new instrument is one
    module in ``pytest_torchcheck/instruments/`` (which may check its own keys) and its keys here.
    """

    parse: Callable[[object], Any]
    allowed: str  # what a value may be, for error messages
    unit: str  # how the measured value is printed: bytes, seconds, count, flops
    what: str  # one-line meaning, for the docs and --markers
    instrument: str = ""  # what measures a limit: the NAME of an instrument in pytest_torchcheck.instruments
    # What compares the measurement with a limit: one of report.CHECKS, called with the key; empty (a key
    # of an instrument added as one module): the instrument's own check.
    check: str = ""
    needs: str = ""  # "cuda": skipped without CUDA; "host_memory": skipped without glibc's mallinfo2()
    repeated: bool = False  # needs the region to run more than once: the marker, or the fixture given a function
    default: str = ""  # as the signature shows it
    # For a check that several keys share: which value of the measurement it compares (an attribute of
    # the Measurement, or of what the instrument recorded), what a failure calls it, and its likely cause.
    reads: str = ""
    noun: str = ""
    hint: str = ""


_CUDA_HINT = ("larger activations (batch, sequence), a full-size temporary, or tensors kept alive; "
              "torch.cuda.memory._record_memory_history() shows who allocated the peak")


LIMITS: dict[str, Key] = {
    "cpu_memory": Key(units.parse_size, units.SIZE_HELP, "bytes",
                      "peak CPU memory (torch tensors + native allocations) above the region's start",
                      instrument="cpu_memory", check="cpu_memory", needs="host_memory"),
    "cuda_memory": Key(units.parse_size, units.SIZE_HELP, "bytes",
                       "peak CUDA memory allocated per device above the region's start (skipped without CUDA)",
                       instrument="cuda_peaks", check="cuda_memory", needs="cuda", reads="cuda_allocated",
                       noun="peak allocated above the region's start", hint=_CUDA_HINT),
    "cuda_reserved": Key(units.parse_size, units.SIZE_HELP, "bytes",
                         "peak CUDA memory reserved by the caching allocator per device (skipped without CUDA)",
                         instrument="cuda_peaks", check="cuda_memory", needs="cuda", reads="cuda_reserved",
                         noun="peak reserved", hint=_CUDA_HINT),
    "memory_growth": Key(units.parse_size, units.SIZE_HELP, "bytes",
                         "memory still held after each repeated run, per run (median; leaks)",
                         instrument="held_memory", check="memory_growth", needs="host_memory", repeated=True),
    "syncs": Key(units.parse_count, units.COUNT_HELP, "count",
                 "host-device synchronisations (.item(), .cpu(), .tolist(), .numpy(), nonzero, boolean masks, "
                 "printing); counted identically on CPU and GPU", instrument="syncs", check="syncs"),
    "flops": Key(units.parse_count, units.COUNT_HELP, "flops", "floating-point operations (torch's flop counter)",
                 instrument="flops", check="flops"),
    "ops": Key(units.parse_count, units.COUNT_HELP, "count", "ATen operator calls (a kernel-launch proxy)",
               instrument="ops", check="ops"),
    "graph_breaks": Key(units.parse_count, units.COUNT_HELP, "count", "torch.compile graph breaks",
                        instrument="compile", check="compile", reads="graph_breaks", noun="graph break(s)",
                        hint="Python control flow on tensor values (`if loss > x:`), .item()/.tolist() or printing "
                             "in compiled code, or an unsupported call; make it branchless (torch.where, clamp) "
                             "or use torch.cond"),
    "recompiles": Key(units.parse_count, units.COUNT_HELP, "count", "torch.compile recompilations",
                      instrument="compile", check="compile", reads="recompiles", noun="recompilation(s)",
                      hint="inputs whose shapes, dtypes or Python values change between calls; mark dimensions "
                           "dynamic (torch._dynamo.mark_dynamic) or keep them fixed"),
    "time": Key(units.parse_time, units.TIME_HELP, "seconds",
                "median wall time of the repeated runs (CUDA events when CUDA is in use)",
                instrument="timer", check="time", repeated=True),
}
SETTINGS: dict[str, Key] = {
    "warmup": Key(lambda v: units.parse_int(v, 0), "an integer >= 0", "count",
                  "unmeasured runs of the region first (default 0; needs the region as a function)",
                  repeated=True, default="0"),
    "repeats": Key(lambda v: units.parse_int(v, 1), "an integer >= 1", "count",
                   "measured runs for time and memory_growth (default 5)", default="5"),
    "tolerance": Key(units.parse_ratio, "a ratio >= 1", "ratio",
                     "baseline comparison: fail when slower than baseline x tolerance"),
    "name": Key(units.parse_name, "a non-empty string", "", "the region's name in messages and baselines"),
}
KEYS = {**LIMITS, **SETTINGS}
# Keys that need the region to run more than once: the marker, or the fixture given a function.
REPEATED = frozenset(k for k, key in KEYS.items() if key.repeated)
CUDA_KEYS = frozenset(k for k, key in KEYS.items() if key.needs == "cuda")
HOST_MEMORY_KEYS = frozenset(k for k, key in KEYS.items() if key.needs == "host_memory")


def _default(key: Key) -> Any:
    """A setting's value when no layer gives one: its declared default, parsed (None: none declared)."""
    return key.parse(key.default) if key.default else None


DEFAULT_REPEATS: int = _default(SETTINGS["repeats"])


def signature() -> str:
    """The marker's signature, from the declarations: ``budget(*, cpu_memory=, ..., repeats=5, ...)``."""
    return f"budget(*, {', '.join(f'{k}={key.default}' for k, key in KEYS.items())})"


SIGNATURE = signature()  # `pytest --markers` shows it; usage errors quote it


def instruments(keys: set[str] | frozenset[str]) -> frozenset[str]:
    """What must measure a region with limits ``keys``."""
    return frozenset(LIMITS[k].instrument for k in keys if k in LIMITS)


class BudgetUsageError(TorchcheckUsageError):
    """A budget was given a bad key or value."""


@dataclass(frozen=True)
class Budget:
    """Validated limits (bytes, seconds, counts) and run settings for one region."""

    limits: Mapping[str, Any] = field(default_factory=dict)
    # One field per setting in SETTINGS, defaulting to its declaration's default.
    warmup: int = _default(SETTINGS["warmup"])
    repeats: int = DEFAULT_REPEATS
    tolerance: float | None = _default(SETTINGS["tolerance"])
    name: str | None = _default(SETTINGS["name"])
    sources: Mapping[str, str] = field(default_factory=dict)  # key -> where its value came from

    @property
    def needs_repeats(self) -> bool:
        return any(LIMITS[k].repeated for k in self.limits)


def parse_values(values: Mapping[str, object], source: str) -> dict[str, Any]:
    """Each key checked against ``KEYS``; values parsed; errors name key, value, source and what is allowed."""
    parsed: dict[str, Any] = {}
    for key, value in values.items():
        spec = KEYS.get(key)
        if spec is None:
            close = _close(key)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise BudgetUsageError(f"{source}: unknown budget key {key!r}{hint}; valid keys: "
                                   f"{', '.join(LIMITS)}; settings: {', '.join(SETTINGS)}")
        try:
            parsed[key] = spec.parse(value)
        except units.UnitError as e:
            raise BudgetUsageError(f"{source}: {key}={value!r}: {e}") from None
    return parsed


def _close(key: str) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.6)
    return found[0] if found else None


_PAIR = re.compile(r"^\s*(?P<key>[A-Za-z_]\w*)\s*=\s*(?P<value>.+?)\s*$")


def parse_spec_string(text: str, source: str) -> dict[str, Any]:
    """``"syncs=0, cpu_memory=512MiB"`` (commas or whitespace between pairs) -> parsed values."""
    values: dict[str, object] = {}
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        m = _PAIR.match(part)
        if m is None:
            raise BudgetUsageError(f"{source}: cannot read {part!r}; write key=value pairs separated by commas "
                                   f"or spaces, e.g. 'syncs=0, cpu_memory=512MiB'")
        if m.group("key") in values:
            raise BudgetUsageError(f"{source}: budget key {m.group('key')!r} given twice")
        values[m.group("key")] = m.group("value").strip("'\"")
    return parse_values(values, source)


def build(layers: list[tuple[dict[str, Any], str]]) -> Budget:
    """A Budget from parsed layers, lowest precedence first (ini/env/command-line defaults, then the marker)."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for values, source in layers:
        for key, value in values.items():
            merged[key] = value
            sources[key] = source
    limits = {k: v for k, v in merged.items() if k in LIMITS}
    settings = {k: merged[k] if k in merged else _default(key) for k, key in SETTINGS.items()}
    return Budget(limits=limits, sources=sources, **settings)
