"""Which line's results hold the largest autograd graphs: named for a failing ``cpu_memory`` budget."""

from __future__ import annotations

import sys
import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from pytest_torchcheck.instruments.sites import PACKAGE_DIR, SKIP_DIRS, Site, call_site


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
        if frame.f_code.co_filename.startswith(SKIP_DIRS) or not frame.f_back.f_code.co_filename.startswith(
                PACKAGE_DIR):
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
