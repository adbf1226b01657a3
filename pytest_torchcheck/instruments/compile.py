"""torch.compile events: the ``compile`` instrument records graph breaks and recompilations with their
reasons and locations, from dynamo's logs."""

from __future__ import annotations

import linecache
import logging
import re
from dataclasses import dataclass
from typing import Any

from pytest_torchcheck.instruments.base import REGION, Instrument, register
from pytest_torchcheck.instruments.measurement import Measurement
from pytest_torchcheck.instruments.sites import short_path


@dataclass
class CompileEvent:
    kind: str  # "graph break" or "recompile"
    location: str
    reason: str


_GB_LOC = re.compile(r"in user code at (?P<loc>.+?:\d+)\s*$")
_RECOMPILE = re.compile(r"^Recompiling function (?P<fn>\S+) in (?P<loc>.+?:\d+)\s*$")


def short_location(loc: str) -> str:
    path, _, line = loc.rpartition(":")
    return f"{short_path(path)}:{line}"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[CompileEvent] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            lines = record.getMessage().splitlines()
        except Exception:  # a log record we cannot format is not worth failing the test over
            return
        if not lines:
            return
        if record.name.endswith("__recompiles"):
            m = _RECOMPILE.match(lines[0])
            guards = [ln.strip().lstrip("- ") for ln in lines[1:] if ln.strip().startswith("-")]
            self.events.append(CompileEvent("recompile", short_location(m.group("loc")) if m else "?",
                                            (f"{m.group('fn')}: " if m else "") + "; ".join(guards[:3])))
        elif record.name.endswith("symbolic_convert.__graph_breaks"):
            m = _GB_LOC.search(lines[0])
            reason = next((ln.split("Reason:", 1)[1].strip() for ln in lines if "Graph Break Reason:" in ln), "")
            code = ""
            if m:
                path, _, line = m.group("loc").rpartition(":")
                code = linecache.getline(path, int(line)).strip()
            self.events.append(CompileEvent("graph break", short_location(m.group("loc")) if m else "?",
                                            reason + (f" (code: {code})" if code else "")))


class CompileWatcher:
    """Graph breaks and recompilations under torch.compile, with reasons and locations.

    Dynamo's caches are reset on entry, so code compiled before the region (by an earlier test) is compiled
    again inside it and every break is seen, whatever ran before.
    """

    _ARTIFACTS = ("graph_breaks", "recompiles")

    def __init__(self) -> None:
        self.handler = _Collect()
        self._saved: list[tuple[logging.Logger, int, bool]] = []
        self._state: set[str] | None = None
        self._counter_start = 0

    def __enter__(self) -> CompileWatcher:
        import torch._dynamo
        import torch._logging._internal as log_internal
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        state = log_internal.log_state
        self._state = set(state.artifact_names)
        for name in self._ARTIFACTS:
            state.enable_artifact(name)
        for qname in list(log_internal.log_registry.artifact_log_qnames):
            if qname.endswith(tuple(f"__{a}" for a in self._ARTIFACTS)):
                logger = logging.getLogger(qname)
                self._saved.append((logger, logger.level, logger.propagate))
                logger.setLevel(logging.DEBUG)
                logger.propagate = False  # ours, not the user's stderr
                logger.addHandler(self.handler)
        self._counter_start = sum(counters["unimplemented"].values())
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch._logging._internal as log_internal
        from torch._dynamo.utils import counters

        for logger, level, propagate in self._saved:
            logger.removeHandler(self.handler)
            logger.setLevel(level)
            logger.propagate = propagate
        if self._state is not None:
            log_internal.log_state.artifact_names.intersection_update(self._state)
        self._counter_unimplemented = sum(counters["unimplemented"].values()) - self._counter_start

    @property
    def graph_breaks(self) -> list[CompileEvent]:
        return [e for e in self.handler.events if e.kind == "graph break"]

    @property
    def recompiles(self) -> list[CompileEvent]:
        return [e for e in self.handler.events if e.kind == "recompile"]

    @property
    def graph_break_count(self) -> int:
        # The log has one record per break; the counter is the fallback if a torch version logs differently.
        return max(len(self.graph_breaks), self._counter_unimplemented if not self.graph_breaks else 0)

    def count(self, events: str) -> int:
        """How many of the recorded ``events`` (``graph_breaks``, ``recompiles``: a budget key's
        ``reads``) there were."""
        if events == "graph_breaks":
            return self.graph_break_count
        return len(getattr(self, events))


@register
class Compile(Instrument):
    NAME = "compile"
    WHAT = "torch.compile graph breaks and recompilations, with reasons and locations"
    SCOPE = REGION  # code compiles in the warm-up runs too: every run's events count

    def start(self) -> None:
        self.watcher = CompileWatcher().__enter__()

    def stop(self) -> None:
        self.watcher.__exit__(None, None, None)

    def fill(self, m: Measurement) -> None:
        m.compile = self.watcher
