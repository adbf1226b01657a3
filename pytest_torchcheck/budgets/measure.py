"""Measuring a region: sync/op/flop counters, CPU and CUDA memory peaks, growth, time, torch.compile events.

Imported only by tests that use a budget (it imports torch).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import heapq
import linecache
import logging
import os
import re
import statistics
import sys
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import pytest_torchcheck

_SKIP_DIRS = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(pytest_torchcheck.__file__) + os.sep,
              os.path.dirname(contextlib.__file__) + os.sep + "contextlib.py")


# ------------------------------------------------------------------ call sites
@dataclass(frozen=True)
class Site:
    file: str
    line: int
    via: str = ""  # the torch function that made the call, when the user's line only led to it

    @property
    def source(self) -> str:  # read when a message is written, not on the measured path
        return linecache.getline(self.file, self.line).strip()

    def __str__(self) -> str:
        text = f"{short_path(self.file)}:{self.line}  {self.source}".rstrip()
        return f"{text} -> {self.via}" if self.via else text


def short_path(path: str) -> str:
    """``path`` relative to the current directory, as pytest shows files, unless that climbs two levels up."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith(".." + os.sep + "..") else rel


def user_frame(depth: int) -> Any:
    """The innermost frame outside torch and torchcheck, from ``depth`` frames above the caller up (or None)."""
    f = sys._getframe(depth + 1)
    while f is not None and f.f_code.co_filename.startswith(_SKIP_DIRS):
        f = f.f_back
    return f


def call_site(depth: int = 2) -> Site:
    """The user's line that made the call."""
    f = user_frame(depth)
    if f is None:
        return Site("<unknown>", 0)
    return Site(f.f_code.co_filename, f.f_lineno)


# ------------------------------------------------------------------ syncs
# Calls that copy device data to the host or need a device result to size their output.
_SYNC_CALLS = {
    "item": ".item()", "tolist": ".tolist()", "numpy": ".numpy()", "cpu": ".cpu()",
    "__bool__": "bool(tensor) / if tensor", "__float__": "float(tensor)", "__int__": "int(tensor)",
    "__index__": "tensor used as an index", "__complex__": "complex(tensor)",
    "__repr__": "printing a tensor", "__format__": "formatting a tensor",
    "nonzero": "nonzero", "argwhere": "argwhere", "masked_select": "masked_select", "unique": "unique",
    "unique_consecutive": "unique_consecutive", "equal": "torch.equal", "allclose": "allclose",
    "is_nonzero": "is_nonzero",
}
# Which calls count on a CPU tensor, so that a CPU-only run counts what the same code syncs on a GPU:
# a CPU tensor stands for a device tensor (model parameters, the batch, the loss all live on the CPU
# only because the run has no GPU), except where it would be on the host in a GPU run too:
# - torch's host-side machinery reads it: torch.optim (optimizers' step counters, which torch keeps on
#   the host unless capturable or fused, and lr_scheduler) and torch.utils.data (samplers'
#   randperm().tolist(), the worker seed). Those packages call .item()/.tolist() only on host tensors;
#   their device-resident variants (capturable, fused) avoid the call altogether.
# - it is a host scalar: a 0-dim tensor the region created with no device (torch.tensor(0.5),
#   torch.full((), 2.0)) and did not move with .to()/.cuda(), or one computed from such scalars only.
#   Only 0-dim: a CPU-only test creates its batch and model without a device too, and those stand
#   for device tensors.
# A tensor on an accelerator always counts. torch.amp's GradScaler is not host-side: its found_inf
# lives on the device, and GradScaler.step reads it (one real sync per step, none with a fused optimizer).
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HOST_SIDE_DIRS = tuple(os.path.join(_TORCH_DIR, *d.split("/")) + os.sep for d in ("optim", "utils/data"))
_FACTORIES = frozenset({
    "tensor", "as_tensor", "scalar_tensor", "zeros", "ones", "full", "empty", "arange", "range", "linspace",
    "logspace", "eye", "rand", "randn", "randint", "randperm"})
_LITERAL_CPU = re.compile(r"""\.to\(\s*(?:device\s*=\s*)?(?:torch\.device\(\s*)?["']cpu["']""")


def _is_mask(index: Any) -> bool:
    if isinstance(index, torch.Tensor):
        return index.dtype in (torch.bool, torch.uint8)
    if isinstance(index, (tuple, list)):
        return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in index)
    return False


def _to_cpu(args: tuple, kwargs: dict) -> bool:
    for a in list(args[1:]) + [kwargs.get("device")]:
        if isinstance(a, str) and a.split(":")[0] == "cpu":
            return True
        if isinstance(a, torch.device) and a.type == "cpu":
            return True
    return False


def _tensors(args: tuple, kwargs: dict) -> list:
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            found.append(a)
        elif isinstance(a, (tuple, list)):
            found.extend(t for t in a if isinstance(t, torch.Tensor))
    return found


def _torch_function_name(frame: Any) -> str:
    """``torch.amp.grad_scaler.GradScaler._maybe_opt_step`` for a frame in torch's source."""
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
    return f"{frame.f_globals.get('__name__', '?')}.{qualname}"


class SyncCounter(TorchFunctionMode):
    """Counts host-device synchronisations by the Python call that forces them, with the call site."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: Counter[tuple[str, Site]] = Counter()
        # Tensors this region made on the host on purpose, by id. Not a WeakSet: its lookups compare
        # tensors with ==, which is elementwise (and would itself be a counted call).
        self.host: dict[int, weakref.ref] = {}

    @property
    def total(self) -> int:
        return sum(self.sites.values())

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        what = _SYNC_CALLS.get(name)
        if what is None:
            if name in ("__getitem__", "__setitem__") and len(args) > 1 and _is_mask(args[1]):
                what = "boolean mask indexing" if name == "__getitem__" else "boolean mask assignment"
            elif name == "where" and len(args) + len(kwargs) == 1:
                what = "torch.where(condition)"
            elif name == "to" and _to_cpu(args, kwargs):
                what = ".to('cpu')"
        if what is None:
            out = func(*args, **kwargs)
            if name in _FACTORIES:
                if kwargs.get("device") is None and isinstance(out, torch.Tensor) and out.dim() == 0 \
                        and not _tensors(args, kwargs):
                    self._mark_host(out)
            elif name in ("to", "cuda"):
                self.host.pop(id(out), None)  # moved to "the device", even if that is the CPU it was on
            elif self.host and isinstance(out, torch.Tensor):
                inputs = _tensors(args, kwargs)
                if inputs and all(self._is_host(t) for t in inputs):
                    self._mark_host(out)
            return out
        if name == "to":
            self.host.pop(id(args[0]), None)
        tensors = _tensors(args, kwargs)
        if tensors and all(t.device.type == "cpu" for t in tensors):
            caller = sys._getframe(1)
            if caller.f_code.co_filename.startswith(_HOST_SIDE_DIRS) or all(self._is_host(t) for t in tensors):
                return func(*args, **kwargs)
            if what == ".to('cpu')" and not _LITERAL_CPU.search(
                    linecache.getline(caller.f_code.co_filename, caller.f_lineno)):
                # x.to(device) with device == "cpu": a copy to the GPU, or nothing, in a GPU run; a
                # read-back only when the line names the host itself (x.to("cpu")).
                return func(*args, **kwargs)
            site = call_site()
        else:
            caller = sys._getframe(1)
            site = call_site()
        if caller.f_code.co_filename.startswith(_TORCH_DIR):
            site = Site(site.file, site.line, _torch_function_name(caller))
        self.sites[(what, site)] += 1
        return func(*args, **kwargs)

    def _mark_host(self, out: Any) -> None:
        if isinstance(out, torch.Tensor):
            self.host[id(out)] = weakref.ref(out)

    def _is_host(self, t: torch.Tensor) -> bool:
        ref = self.host.get(id(t))
        return ref is not None and ref() is t


# ------------------------------------------------------------------ CPU memory
class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _load_mallinfo() -> Callable[[], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    fn.argtypes = []

    def in_use() -> int:
        m = fn()
        return m.uordblks + m.hblkhd  # bytes in use from malloc's heaps + its mmapped chunks

    return in_use


cpu_in_use = _load_mallinfo()
CPU_MEMORY_UNAVAILABLE = ("cpu_memory and memory_growth need glibc's mallinfo2() (Linux, glibc >= 2.33) to read "
                          "the bytes malloc has handed out; it is not available on this platform")


class _Legacy(NamedTuple):
    """torch's legacy profiler, configured for memory events only, and the switch of its operator callbacks."""

    config: Any
    enable: Callable[[Any], None]
    disable: Callable[[], list]
    record_function: Callable[[bool], None]
    profiler_enabled: Callable[[], bool]


def _legacy_memory_profiler() -> _Legacy | None:
    try:
        from torch.autograd import (_disable_profiler_legacy, _enable_profiler_legacy, _enable_record_function,
                                    _profiler_enabled)
        from torch._C._profiler import ProfilerConfig, ProfilerState, _ExperimentalConfig

        # CPU profiling state, memory events on; no input shapes, stacks, flops or modules.
        config = ProfilerConfig(ProfilerState.CPU, False, True, False, False, False, _ExperimentalConfig())
    except (ImportError, AttributeError, TypeError, RuntimeError):
        return None
    return _Legacy(config, _enable_profiler_legacy, _disable_profiler_legacy, _enable_record_function,
                   _profiler_enabled)


_LEGACY = _legacy_memory_profiler()
_quieted = False


def _quiet_unknown_free_warning() -> None:
    """Use up, once per process and out of sight, the warning torch prints for a free it has no size for.

    torch's CPU allocator logs "Memory block of unknown size was allocated before the profiling started" on
    the first free (and every thousandth after) of memory allocated while no profiler listened. Every region
    frees some of the caller's tensors, so the first region would print it into the test's stderr.
    """
    global _quieted
    _quieted = True
    block = torch.empty(1)
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to keep clean
        saved = None
    try:
        if saved is not None:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 2)
        _LEGACY.enable(_LEGACY.config)
        _LEGACY.record_function(False)
        del block
        for _ in range(256):  # and some events of the profiler's own, so that its first-use state is not a region's
            torch.empty(1)
        _LEGACY.record_function(True)
        _LEGACY.disable()
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


# pybind11 keeps every live bound object in one hash table (its registered instances) whose bucket array
# grows with the most objects ever alive at once and never shrinks. The legacy profiler hands back one
# bound object per memory event, all at once, so the first region with more events than any before grows
# that table by about 11 bytes per event (1.3 MB for 120,000 events), and the malloc reading at the
# region's end took that for memory the region kept: the first operator-heavy region of a process measured
# about 1.2 MiB more than the same region later. The table is grown once, up front, for this many objects,
# and a region that outgrows it is measured again (the table then fits it).
_REGISTRY_START = 1 << 16
_registry_capacity = 0


def _grow_pybind_registry(n: int) -> None:
    """Have ``n`` bound objects alive at once, so that pybind11's instance table holds that many."""
    global _registry_capacity
    from torch._C._profiler import _ExperimentalConfig

    objects = [_ExperimentalConfig() for _ in range(n)]
    del objects
    _registry_capacity = max(_registry_capacity, n)


class AllocatorPeak:
    """The most bytes a region's own allocations from torch's CPU allocator held at once.

    torch's CPU allocator reports every allocation and free to a profiler that asks for memory events, from
    inside operators too (a kernel's temporary counts). The legacy profiler is that listener here, with torch's
    operator callbacks (RecordFunction) switched off for the region: nothing is recorded per operator, one
    event per allocation, so the cost does not grow with the number of operators. The events carry sizes but
    no pointers, so a free counts only when the region allocated a block of that size that is still held: the
    caller's memory freed inside the region neither counts nor goes below zero.

    Native allocations outside torch's allocator are seen through malloc's in-use bytes at the region's two
    ends: the peak is at least what the region still holds at its end.
    """

    def __init__(self) -> None:
        self.peak = 0
        self.largest: list[tuple[int, int]] = []
        self.outgrew_registry = False  # more events than pybind's table held: the malloc reading is off

    @staticmethod
    def usable() -> bool:
        """False where this torch lacks the hooks, or a profiler is already running (only one can be)."""
        return _LEGACY is not None and cpu_in_use is not None and not _LEGACY.profiler_enabled()

    def __enter__(self) -> AllocatorPeak:
        if not _quieted:
            _quiet_unknown_free_warning()
        if _registry_capacity < _REGISTRY_START:
            _grow_pybind_registry(_REGISTRY_START)
        self.malloc_start = cpu_in_use()
        _LEGACY.enable(_LEGACY.config)
        _LEGACY.record_function(False)
        return self

    def __exit__(self, *exc: Any) -> None:
        _LEGACY.record_function(True)  # torch's default; it has no getter to restore a caller's own setting
        per_thread = _LEGACY.disable()
        held = peak = 0
        live: dict[int, int] = {}  # size -> blocks of that size the region allocated and still holds
        sizes: dict[int, int] = {}  # size -> blocks of that size the region allocated
        ordered = per_thread[0] if len(per_thread) == 1 else sorted(
            (e for events in per_thread for e in events), key=lambda e: e.start_us())
        for e in ordered:
            size = e.cpu_memory_usage()
            if size > 0:
                live[size] = live.get(size, 0) + 1
                sizes[size] = sizes.get(size, 0) + 1
                held += size
                if held > peak:
                    peak = held
            elif size < 0 and live.get(-size):
                live[-size] -= 1
                held += size
        events = sum(len(t) for t in per_thread)
        del per_thread, ordered
        global _registry_capacity
        self.outgrew_registry = events > _registry_capacity
        if self.outgrew_registry:
            _registry_capacity = events
            self.peak = peak  # the end reading holds pybind's grown table: the caller measures again
        else:
            self.peak = max(peak, cpu_in_use() - self.malloc_start)
        self.largest = [(size, sizes[size]) for size in heapq.nlargest(8, sizes)]  # (bytes, how many)


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


def _skip_dynamo_once(mode: type) -> None:
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


_skip_dynamo_once(OpCounter)


# ------------------------------------------------------------------ CUDA memory
def cuda_available() -> bool:
    return torch.cuda.is_available()


class CudaPeaks:
    """Peak allocated (above the start) and peak reserved per device, from the caching allocator's statistics."""

    def __init__(self) -> None:
        self.devices = list(range(torch.cuda.device_count()))
        self.start: dict[int, int] = {}
        self.allocated: dict[int, int] = {}
        self.reserved: dict[int, int] = {}

    def __enter__(self) -> CudaPeaks:
        for d in self.devices:
            torch.cuda.reset_peak_memory_stats(d)
            self.start[d] = torch.cuda.memory_allocated(d)
        return self

    def __exit__(self, *exc: Any) -> None:
        for d in self.devices:
            self.allocated[d] = max(0, torch.cuda.max_memory_allocated(d) - self.start[d])
            self.reserved[d] = torch.cuda.max_memory_reserved(d)


# ------------------------------------------------------------------ torch.compile events
@dataclass
class CompileEvent:
    kind: str  # "graph break" or "recompile"
    location: str
    reason: str


_GB_LOC = re.compile(r"in user code at (?P<loc>.+?:\d+)\s*$")
_RECOMPILE = re.compile(r"^Recompiling function (?P<fn>\S+) in (?P<loc>.+?:\d+)\s*$")


def _short_loc(loc: str) -> str:
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
            self.events.append(CompileEvent("recompile", _short_loc(m.group("loc")) if m else "?",
                                            (f"{m.group('fn')}: " if m else "") + "; ".join(guards[:3])))
        elif record.name.endswith("symbolic_convert.__graph_breaks"):
            m = _GB_LOC.search(lines[0])
            reason = next((ln.split("Reason:", 1)[1].strip() for ln in lines if "Graph Break Reason:" in ln), "")
            code = ""
            if m:
                path, _, line = m.group("loc").rpartition(":")
                code = linecache.getline(path, int(line)).strip()
            self.events.append(CompileEvent("graph break", _short_loc(m.group("loc")) if m else "?",
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


# ------------------------------------------------------------------ timing
class Timer:
    """Wall time of one run; with CUDA in use, CUDA events on the current stream after a synchronise."""

    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        self.method = "CUDA events (current stream)" if self.cuda else "time.perf_counter"

    def run(self, fn: Callable[[], Any]) -> float:
        if self.cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


# ------------------------------------------------------------------ one measurement
@dataclass
class Measurement:
    """What one region measured (only the keys its budget asked for are filled in)."""

    runs: int = 0
    syncs: SyncCounter | None = None
    ops: Counter[str] | None = None
    flops: int | None = None
    flops_by_op: dict[str, int] = field(default_factory=dict)
    cpu_peak: int | None = None
    cpu_method: str = ""  # ALLOCATOR or SAMPLED
    cpu_allocations: list[Allocation] = field(default_factory=list)  # the largest, by operator and call site
    cpu_sizes: list[tuple[int, int]] = field(default_factory=list)  # the largest allocation sizes, with counts
    cpu_remeasure: bool = False  # the allocator run outgrew pybind's instance table (see _grow_pybind_registry)
    cpu_graphs: list[tuple[int, Site]] = field(default_factory=list)  # autograd nodes held, by the line that made them
    cuda_allocated: dict[int, int] = field(default_factory=dict)
    cuda_reserved: dict[int, int] = field(default_factory=dict)
    growth: dict[str, list[int]] = field(default_factory=dict)  # device -> bytes held after each repeated run
    times: list[float] = field(default_factory=list)
    time_method: str = ""
    compile: CompileWatcher | None = None
    block: bool = False  # a `with` block: it ran once and cannot be run again

    def growth_per_run(self, device: str) -> int:
        held = self.growth[device]
        return int(statistics.median(b - a for a, b in zip(held, held[1:])))

    @property
    def time(self) -> float | None:
        return statistics.median(self.times) if self.times else None


ALLOCATOR = "allocator events"
SAMPLED = "sampled after each operator"


def attribute_cpu_memory(fn: Callable[[], Any], m: Measurement) -> None:
    """Run ``fn`` once more, malloc read after every operator, to name the largest allocations and their lines.

    The measured run records sizes only (that is what keeps it cheap); this run, made only for a failing
    budget, pays the per-operator cost to say which operator and which line of the test allocated.
    """
    if m.cpu_allocations or cpu_in_use is None:
        return
    counter = OpCounter(count=False, memory=True)
    keepers = GraphKeepers()
    with counter, keepers:
        fn()
    counter.finish()
    m.runs += 1
    m.cpu_allocations = counter.largest()
    m.cpu_graphs = keepers.largest


class GraphKeepers(TorchFunctionMode):
    """Which line's tensors hold the largest autograd graphs when the user's code returns from the region.

    A tensor kept with its graph (``running_loss += loss``) keeps every step's graph alive: the saved
    tensors while no backward ran, the nodes (host memory outside torch's allocator) after it. The
    largest allocations then name kernels; this names the line whose result holds the graph. Every
    tensor-producing call with a ``grad_fn`` is remembered by call site (weakly), and when the region's
    outermost user frame returns (a profile hook, so its locals are still alive), the graphs reachable
    from each site's live results are counted. Made only for a failing cpu_memory budget.
    """

    def __init__(self) -> None:
        super().__init__()
        self.outputs: dict[Site, list] = {}
        self.largest: list[tuple[int, Site]] = []  # (autograd nodes, site), largest first
        self._saved_profile: Any = None

    def __enter__(self) -> GraphKeepers:
        self._saved_profile = sys.getprofile()
        sys.setprofile(self._on_event)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        sys.setprofile(self._saved_profile)

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            refs = self.outputs.setdefault(call_site(), [])
            refs.append(weakref.ref(out))
            if len(refs) > 4:
                del refs[0]
        return out

    def _on_event(self, frame: Any, event: str, arg: Any) -> None:
        if event != "return" or frame.f_back is None:
            return
        if frame.f_code.co_filename.startswith(_SKIP_DIRS) or not frame.f_back.f_code.co_filename.startswith(
                os.path.dirname(pytest_torchcheck.__file__)):
            return
        # The region's outermost user frame is returning: its locals are still alive.
        counted = []
        for site, refs in self.outputs.items():
            roots = [t.grad_fn for t in (r() for r in refs) if t is not None and t.grad_fn is not None]
            if roots:
                counted.append((_graph_size(roots), site))
        counted.sort(key=lambda c: -c[0])
        self.largest = counted[:3]


def _graph_size(roots: list, limit: int = 1_000_000) -> int:
    seen: set = set()
    stack = list(roots)
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return len(seen)


def _memory_held(cuda: bool) -> dict[str, int]:
    gc.collect()
    held = {"cpu": cpu_in_use()} if cpu_in_use is not None else {}
    if cuda:
        for d in range(torch.cuda.device_count()):
            held[f"cuda:{d}"] = torch.cuda.memory_allocated(d)
    return held


# What budgets.spec's keys name as their instrument (Key.instrument); a test holds the two in step.
INSTRUMENTS = frozenset({"flops", "cuda_peaks", "cpu_memory", "ops", "syncs", "compile", "timer", "held_memory"})


@contextlib.contextmanager
def instruments(keys: set[str], m: Measurement) -> Iterator[None]:
    """The counters the limits ``keys`` need, around one run; results land in ``m``."""
    from pytest_torchcheck.budgets.spec import instruments as needed

    need = needed(keys)
    with contextlib.ExitStack() as stack:
        flop_counter = None
        if "flops" in need:
            from torch.utils.flop_counter import FlopCounterMode

            flop_counter = stack.enter_context(FlopCounterMode(display=False))
        cuda = None
        if "cuda_peaks" in need:
            cuda = stack.enter_context(CudaPeaks())
        allocator = None
        if "cpu_memory" in need and AllocatorPeak.usable():
            allocator = stack.enter_context(AllocatorPeak())
        sampled = "cpu_memory" in need and allocator is None  # a profiler was already running: sample malloc
        op_counter = None
        if "ops" in need or sampled:
            op_counter = stack.enter_context(OpCounter(count="ops" in need, memory=sampled))
        if "syncs" in need:
            m.syncs = stack.enter_context(SyncCounter())
        try:
            yield
        finally:
            if op_counter is not None:
                op_counter.finish()
    if op_counter is not None:
        if "ops" in need:
            m.ops = op_counter.ops
        if sampled:
            m.cpu_peak = op_counter.peak_above_start
            m.cpu_allocations = op_counter.largest()
            m.cpu_method = SAMPLED
    if allocator is not None:
        m.cpu_peak = allocator.peak
        m.cpu_sizes = allocator.largest
        m.cpu_method = ALLOCATOR
        m.cpu_remeasure = allocator.outgrew_registry
    if flop_counter is not None:
        m.flops = int(flop_counter.get_total_flops())
        m.flops_by_op = {str(k): int(v) for k, v in flop_counter.get_flop_counts().get("Global", {}).items()}
    if cuda is not None:
        m.cuda_allocated, m.cuda_reserved = cuda.allocated, cuda.reserved


def measure_function(fn: Callable[[], Any], keys: set[str], warmup: int, repeats: int, timed: bool) -> Measurement:
    """``warmup`` plain runs, one instrumented run, then ``repeats`` runs for time and memory growth."""
    __tracebackhide__ = True
    from pytest_torchcheck.budgets.spec import instruments as needed

    need = needed(keys)
    m = Measurement()
    with contextlib.ExitStack() as stack:
        if "compile" in need:
            m.compile = stack.enter_context(CompileWatcher())  # compile events count in every run
        for _ in range(warmup):
            fn()
            m.runs += 1
        with instruments(keys, m):
            fn()
        m.runs += 1
        if m.cpu_remeasure:  # the first region this heavy in the process: once more, for a clean reading
            with AllocatorPeak() as again:
                fn()
            m.runs += 1
            m.cpu_peak, m.cpu_sizes, m.cpu_remeasure = again.peak, again.largest, again.outgrew_registry
        growth = "held_memory" in need
        if timed or growth:
            timer = Timer()
            m.time_method = timer.method
            cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
            if growth:
                # Garbage cycles must not look like growth, so each reading follows a full collection. Objects
                # that existed before the region are frozen out of it: a collection then walks only what the
                # runs created (milliseconds instead of a tenth of a second with torch's objects around).
                gc.collect()
                gc.freeze()
            try:
                held = [_memory_held(cuda)] if growth else []
                for _ in range(repeats):
                    t = timer.run(fn)
                    m.runs += 1
                    if timed:
                        m.times.append(t)
                    if growth:
                        held.append(_memory_held(cuda))
            finally:
                if growth:
                    gc.unfreeze()
            if growth:
                m.growth = {dev: [h[dev] for h in held] for dev in held[0]}
    return m


@contextlib.contextmanager
def measure_block(keys: set[str]) -> Iterator[Measurement]:
    """One run of a ``with`` block (no warm-up, no repeats)."""
    from pytest_torchcheck.budgets.spec import instruments as needed

    m = Measurement(block=True)
    with contextlib.ExitStack() as stack:
        if "compile" in needed(keys):
            m.compile = stack.enter_context(CompileWatcher())
        with instruments(keys, m):
            yield m
    m.runs = 1
