"""ATen operator calls: the ``ops`` instrument counts them, and the same dispatch mode can read malloc
after each one to name the largest allocations and their lines."""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from pytest_torchcheck.instruments.base import Instrument, register
from pytest_torchcheck.instruments.malloc import cpu_in_use
from pytest_torchcheck.instruments.measurement import Measurement
from pytest_torchcheck.instruments.sites import Site, user_frame


@dataclass
class Allocation:
    size: int
    op: str
    site: Site


class OpCounter(TorchDispatchMode):
    """Counts ATen operator calls and, with ``memory=True``, samples malloc's bytes in use after each one.

    Torch's CPU tensors come from malloc (``c10::alloc_cpu``), so what malloc handed out between two operators
    is what the later one allocated and kept, and the frame it ran from names the line. This per-operator
    sampling names the largest allocations for a failing ``cpu_memory`` budget (``attribute_cpu_memory``) and
    measures the peak only where ``AllocatorPeak`` cannot listen (a profiler already running): it sees no
    temporary freed inside an operator, and each reading walks malloc's free lists, so it costs more in a
    fragmented heap. This runs once per operator, so it does as little as it can: one malloc reading, counts
    kept per operator object and named only in ``finish()``.
    """

    def __init__(self, count: bool, memory: bool) -> None:
        super().__init__()
        self.count = count
        self.memory = memory and cpu_in_use is not None
        self.calls: dict[Any, int] = {}
        self.ops: Counter[str] = Counter()
        self.start = self.last = cpu_in_use() if self.memory else 0
        self.peak = self.start
        self.allocations: list[tuple] = []  # heap of the largest: (bytes, order, op, code, line)
        self._n = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if self.count:
            self.calls[func] = self.calls.get(func, 0) + 1
        out = func(*args, **kwargs) if kwargs else func(*args)
        if self.memory:
            now = cpu_in_use()
            if now > self.peak:
                self.peak = now
            # What malloc handed out since the last operator returned: this one's outputs and what it keeps.
            grown = now - self.last
            self.last = now
            # Only an allocation that makes the top list pays for finding its call site.
            if grown >= 65536 and (len(self.allocations) < 8 or grown > self.allocations[0][0]):
                self._remember(grown, func)
        return out

    def _remember(self, grown: int, func: Any) -> None:
        # Only the frame is looked up here; names, files and objects are made in largest(), if anyone asks.
        f = user_frame(2)
        self._n += 1
        entry = (grown, self._n, func, f.f_code if f is not None else None, f.f_lineno if f is not None else 0)
        if len(self.allocations) < 8:
            heapq.heappush(self.allocations, entry)
        else:
            heapq.heappushpop(self.allocations, entry)

    def finish(self) -> None:
        if self.memory:
            self.peak = max(self.peak, cpu_in_use())
        for func, n in self.calls.items():
            self.ops[func._overloadpacket.__name__] += n
        self.calls.clear()

    @property
    def peak_above_start(self) -> int:
        return max(0, self.peak - self.start)

    def largest(self) -> list[Allocation]:
        return [Allocation(grown, f"aten.{func._overloadpacket.__name__}",
                           Site(code.co_filename, line) if code is not None else Site("<unknown>", 0))
                for grown, _, func, code, line in sorted(self.allocations, key=lambda e: -e[0])]


def skip_dynamo_once(mode: type) -> None:
    """Take TorchDispatchMode's per-call dynamo guard off ``mode.__torch_dispatch__``; mark its code instead.

    torch wraps every mode's ``__torch_dispatch__`` in ``torch._disable_dynamo`` so that torch.compile never
    traces into it. The wrapper costs two extra Python frames and four eval-frame switches on every operator,
    and imports torch._dynamo (about 0.9 s) on the first one. Marking the function's code object as skipped,
    with everything it calls (what ``torch._dynamo.disable(recursive=True)`` means), does the same once, in
    C. Where this torch lacks the hook, the wrapper stays.
    """
    wrapped = mode.__dict__.get("__torch_dispatch__")
    raw = getattr(wrapped, "__wrapped__", None)
    if raw is None:
        return
    try:
        from torch._C._dynamo.eval_frame import _FrameAction, _FrameExecStrategy, set_code_exec_strategy

        set_code_exec_strategy(raw.__code__, _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP))
    except (ImportError, AttributeError, TypeError, RuntimeError):
        return
    mode.__torch_dispatch__ = raw


skip_dynamo_once(OpCounter)


@register
class Ops(Instrument):
    NAME = "ops"
    WHAT = "ATen operator calls, by operator (a kernel-launch proxy)"
    ORDER = 40

    def start(self) -> None:
        self.counter = OpCounter(count=True, memory=False)
        self.counter.__enter__()

    def stop(self) -> None:
        try:
            self.counter.finish()
        finally:
            self.counter.__exit__(None, None, None)

    def fill(self, m: Measurement) -> None:
        m.ops = self.counter.ops
