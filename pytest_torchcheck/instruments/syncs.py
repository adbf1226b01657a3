"""Host-device synchronisations: the ``syncs`` instrument counts the Python calls that force one, by call site."""

from __future__ import annotations

import linecache
import os
import re
import sys
import weakref
from collections import Counter
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from pytest_torchcheck.instruments.base import Instrument, register
from pytest_torchcheck.instruments.measurement import Measurement
from pytest_torchcheck.instruments.sites import TORCH_DIR, Site, call_site, torch_function_name

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
_HOST_SIDE_DIRS = tuple(os.path.join(TORCH_DIR, *d.split("/")) + os.sep for d in ("optim", "utils/data"))
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
        if caller.f_code.co_filename.startswith(TORCH_DIR):
            site = Site(site.file, site.line, torch_function_name(caller))
        self.sites[(what, site)] += 1
        return func(*args, **kwargs)

    def _mark_host(self, out: Any) -> None:
        if isinstance(out, torch.Tensor):
            self.host[id(out)] = weakref.ref(out)

    def _is_host(self, t: torch.Tensor) -> bool:
        ref = self.host.get(id(t))
        return ref is not None and ref() is t


@register
class Syncs(Instrument):
    NAME = "syncs"
    WHAT = "host-device synchronisations by the call that forces them, with the user's line"
    ORDER = 50  # innermost: a torch function mode sees the user's calls before any dispatch mode

    def start(self) -> None:
        self.counter = SyncCounter()
        self.counter.__enter__()

    def stop(self) -> None:
        self.counter.__exit__(None, None, None)

    def fill(self, m: Measurement) -> None:
        m.syncs = self.counter
