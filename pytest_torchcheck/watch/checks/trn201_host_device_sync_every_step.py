"""TRN201 at run time: a call that makes the host wait for the device, from one line in every optimizer step."""

from __future__ import annotations

import sys

from pytest_torchcheck.watch.check import Check, plural
from pytest_torchcheck.watch.steps import EverySite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# what to intercept -> how the message names it; each reads a tensor's values on the host
_TENSOR_CALLS = {
    "item": ".item()", "tolist": ".tolist()", "cpu": ".cpu()", "numpy": ".numpy()", "nonzero": ".nonzero()",
    "__bool__": "bool()", "__float__": "float()", "__int__": "int()", "__format__": "format()",
    "__repr__": "print()/repr()",
}


class HostDeviceSyncEveryStep(Check):
    """
    Observed, per call site: the calls made by your own code (not by torch, not by an installed package)
    that copy a tensor's values to the host (`.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `.nonzero()`,
    `bool()`, `float()`, `int()`, formatting or printing a tensor) and `torch.cuda.synchronize()`, with
    each optimizer's step count at each call. A call counts when its tensor is on an accelerator (a real
    sync), or, on a CPU run, when it is part of the autograd graph (the loss, a model output, a
    parameter): a tensor the model computed, which a GPU run would hold on the GPU, so the call would
    sync there. When the calls of a site fall in at least three consecutive steps of an optimizer with
    none missed, up to its last step, the site syncs every step. Logging every N steps, a sync once per
    epoch, evaluation after training, and on a CPU run a tensor outside the autograd graph (data,
    metrics from detached values) are never reported.
    """

    CODE = "TRN201"
    NAME = "host-device-sync-in-training-loop"
    SEVERITY = "warning"
    SEES_COMPILED = False  # a sync inside a compiled function is traced by dynamo, not called

    def __init__(self) -> None:
        super().__init__()
        self._sites = EverySite()
        self._real: set[tuple[str, int]] = set()  # sites that synced with an accelerator
        self._site_of: dict[tuple[Any, int], Any] = {}  # (code, instruction) -> its Site

    def install(self, events: Any) -> None:
        super().install(events)
        for method, shown in _TENSOR_CALLS.items():
            events.intercept(f"torch.Tensor.{method}", pre=self._tensor_call(shown), direct=True)
        events.intercept("torch.nonzero", pre=self._tensor_call(".nonzero()"), direct=True)
        events.intercept("torch.cuda.synchronize", pre=self._synchronize, direct=True)

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._sites.optimizer_created(optimizer)

    def on_step_post(self, optimizer: Any) -> None:
        self._sites.stepped(optimizer)

    def _tensor_call(self, shown: str):
        def pre(args: tuple, kwargs: dict) -> None:
            import torch

            tensor = args[0] if args else None
            if not isinstance(tensor, torch.Tensor):
                return
            device = tensor.device.type
            if device == "meta":
                return
            real = device != "cpu"
            if real or tensor.requires_grad:  # requires_grad: a parameter, or computed from one
                self._count(shown, real)

        pre.__self__ = self  # type: ignore[attr-defined]  # the intercept's owner, for unsubscribe
        return pre

    def _synchronize(self, args: tuple, kwargs: dict) -> None:
        self._count("torch.cuda.synchronize()", True)

    def _count(self, shown: str, real: bool) -> None:
        # only the calls your own code makes: an installed package's (a framework's logging) is not yours
        from pytest_torchcheck.watch.sites import LIBRARY, USER

        kind = self.events.sites.kind
        frame = sys._getframe(2)
        while frame is not None and kind(frame.f_code.co_filename) == LIBRARY:
            frame = frame.f_back
        if frame is None or kind(frame.f_code.co_filename) != USER:
            return
        # the user's frame is the site's: found once per instruction (a loop's call is one instruction)
        where = (frame.f_code, frame.f_lasti)
        site = self._site_of.get(where)
        if site is None:
            site = self._site_of[where] = self.site()
            if site is None:
                return
        self._sites.call(site, shown)
        if real:
            self._real.add((site.path, site.line))

    def finish(self) -> None:
        self._site_of.clear()
        for calls, steps, total in self._sites.every_step():
            shown = " and ".join(calls.what)
            where = (calls.site.path, calls.site.line)
            if where in self._real:
                cost = ("each call made the host wait until the device finished its queued work: a "
                        "host-device sync every step")
            else:
                cost = ("on a tensor of the autograd graph, on the CPU here; on a GPU each call would make "
                        "the host wait until the device finished its queued work: a host-device sync every step")
            self.report(calls.site,
                        f"{shown} ran {plural(calls.calls, 'time')} from this line, in each of {steps} "
                        f"consecutive optimizer steps (of {total}), {cost}; keep the value on the device and "
                        "read it every N steps")
