"""TRN804 at run time: a model's parameters moved or cast after ``DistributedDataParallel`` wrapped it."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

_MOVES = ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type")


@record
class _Move:
    wrapped_at: Site | None
    params: list  # the moved module's parameters (weak references)
    before: list  # (device, dtype) of each, before the call


def _state(p: Any) -> tuple[str, str]:
    return str(p.device), str(p.dtype).replace("torch.", "")


class DdpModelMovedAfterWrap(Check):
    """
    Observed: `DistributedDataParallel(...)` wrapping a module, then a call of `.to()`, `.cuda()`,
    `.cpu()`, `.half()`, `.float()`, `.double()`, `.bfloat16()` or `.type()` on the wrapper, on the
    wrapped module or on one of its submodules, after which at least one parameter's device or dtype
    differs from what it was before the call: reported at that call. A call that leaves every parameter
    where and as it was (`.to("cpu")` on a CPU model, `.float()` on a float32 one) is never reported, nor
    is moving a model before wrapping it, nor a module DDP did not wrap (an EMA copy, a teacher).
    """

    CODE = "TRN804"
    NAME = "ddp-model-moved-after-wrap"
    SEVERITY = "error"

    def __init__(self) -> None:
        super().__init__()
        self._wrapped: weakref.WeakKeyDictionary[Any, Site | None] = weakref.WeakKeyDictionary()
        self._moves: list[_Move | None] = []  # one per call in progress (a module's to() may call super's)

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.nn.parallel.DistributedDataParallel.__init__", post=self._wrapping)
        for method in _MOVES:
            events.intercept(f"torch.nn.Module.{method}", pre=self._pre(method), post=self._post(method),
                             direct=True)

    def _wrapping(self, args: tuple, kwargs: dict, result: Any) -> None:
        ddp = args[0]
        module = getattr(ddp, "module", None)
        if module is not None:
            site = self.construction_site(ddp)
            self._wrapped[ddp] = site
            self._wrapped[module] = site

    def _wrapped_at(self, module: Any) -> tuple[bool, Site | None]:
        if module in self._wrapped:
            return True, self._wrapped[module]
        for wrapped, site in list(self._wrapped.items()):  # a submodule of a wrapped model
            if any(sub is module for sub in wrapped.modules()):
                return True, site
        return False, None

    def _pre(self, method: str):
        def pre(args: tuple, kwargs: dict) -> None:
            move = None
            if self._wrapped and args:
                wrapped, site = self._wrapped_at(args[0])
                if wrapped:
                    params = list(args[0].parameters())
                    move = _Move(site, [weakref.ref(p) for p in params], [_state(p) for p in params])
            self._moves.append(move)

        pre.__self__ = self  # type: ignore[attr-defined]
        return pre

    def _post(self, method: str):
        def post(args: tuple, kwargs: dict, result: Any) -> None:
            move = self._moves.pop() if self._moves else None
            if move is None:
                return
            changed = []
            for ref, before in zip(move.params, move.before):
                p = ref()
                if p is not None and _state(p) != before:
                    changed.append((before, _state(p)))
            if not changed:
                return
            (old_device, old_dtype), (new_device, new_dtype) = changed[0]
            what = " and ".join(w for w, a, b in (("device", old_device, new_device), ("dtype", old_dtype, new_dtype))
                                if a != b)
            frm = ", ".join(a for a, b in ((old_device, new_device), (old_dtype, new_dtype)) if a != b)
            to = ", ".join(b for a, b in ((old_device, new_device), (old_dtype, new_dtype)) if a != b)
            wrapped = f" at line {move.wrapped_at.line}" if move.wrapped_at is not None else ""
            self.report(self.site(),
                        f".{method}() changed the {what} of {plural(len(changed), 'parameter')} (of "
                        f"{len(move.params)}) from {frm} to {to} after DistributedDataParallel wrapped the "
                        f"model{wrapped}: DDP built its gradient buckets and broadcast for the parameters as "
                        "they were then; move or cast the model before wrapping it")

        post.__self__ = self  # type: ignore[attr-defined]
        return post

    def finish(self) -> None:
        self._wrapped.clear()
