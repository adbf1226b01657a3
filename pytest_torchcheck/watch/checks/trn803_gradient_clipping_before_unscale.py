"""TRN803 at run time: gradients clipped while they still carried a ``GradScaler``'s scale factor."""

from __future__ import annotations

import math
import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, optimizer_params, plural
from pytest_torchcheck.watch.checks._common import argument

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from pytest_torchcheck.watch.sites import Site

# Where a user's clip lands: ``torch.nn.utils`` and ``torch.nn.utils.clip_grad`` hold the same function
# under two module attributes, and a wrapper replaces one attribute only (``from torch.nn.utils.clip_grad
# import clip_grad_value_`` reaches the second). The deprecated ``clip_grad_norm`` calls the second.
# Each: the dotted name -> (the function's name in messages, its threshold's parameter).
_CLIPS = {
    "torch.nn.utils.clip_grad_norm_": ("clip_grad_norm_", "max_norm"),
    "torch.nn.utils.clip_grad.clip_grad_norm_": ("clip_grad_norm_", "max_norm"),
    "torch.nn.utils.clip_grad_value_": ("clip_grad_value_", "clip_value"),
    "torch.nn.utils.clip_grad.clip_grad_value_": ("clip_grad_value_", "clip_value"),
}
_OUTPUTS = 64  # scaled outputs kept track of (weakly) before the dead ones are dropped


@record
class _Scaled:
    """A backward of a loss that a scaler multiplied."""

    site: Site | None  # the backward() call
    scale: Any  # the scale factor then: a copy of the scaler's one-element tensor (read only to report)


@record
class _Mark:
    """A gradient exactly as a scaled backward left it."""

    param: Any  # weakref
    grad: Any  # weakref
    version: int  # the gradient's version counter then: any in-place change (a clip, zero_()) moves it
    scaled: _Scaled


class GradientClippingBeforeUnscale(Check):
    """
    Observed: what an enabled `GradScaler`'s `scale()` returned, given as the loss to a `backward()`
    (`scaler.scale(loss).backward()`, or a variable holding it), and which gradients of your optimizers'
    parameters that backward wrote; then a call of `torch.nn.utils.clip_grad_norm_` or
    `clip_grad_value_` (any spelling, `torch.nn.utils.clip_grad.*` and the deprecated `clip_grad_norm`
    included) that changed some of those gradients while they were still exactly as the backward left
    them: no `scaler.unscale_(optimizer)` of their optimizer (nor `scaler.step()`, which unscales), no
    zeroing and no other backward into them since. Reported at the clip, with the scale factor and the
    threshold the clip applied to the true gradients (`max_norm / scale`).

    Never reported: a disabled scaler (`enabled=False`, or a CUDA scaler that disabled itself on a
    machine without CUDA), a scale factor of 1.0, an infinite threshold (a norm measured for a log),
    gradients unscaled before the clip, a clip after the step, the parameters of a model whose loss no
    scaler multiplied (a second optimizer without AMP).
    Not followed: a loss computed from scaled ones (`(scaler.scale(a) + scaler.scale(b)).backward()`),
    FSDP's `ShardedGradScaler`, and clipping by other means (`clip_grads_with_norm_`, FSDP's own
    `clip_grad_norm_`, gradients edited by hand).
    """

    CODE = "TRN803"
    NAME = "gradient-clipping-before-unscale"
    SEVERITY = "error"

    def __init__(self) -> None:
        super().__init__()
        self._optimizers: weakref.WeakSet[Any] = weakref.WeakSet()
        # id(scaled output) -> (weakref to it, weakref to its scaler): outputs of scale() not yet freed
        self._outputs: dict[int, tuple[Any, Any]] = {}
        # during a scaled backward: (parameter, its gradient, the gradient's version) before it
        self._before: list[tuple[Any, Any, int]] | None = None
        self._scaled: _Scaled | None = None  # the last scaled backward
        self._marks: dict[int, _Mark] = {}  # id(parameter) -> its gradient as a scaled backward left it
        self._clipping: list[tuple[Any, int, _Scaled]] | None = None  # marked gradients when a clip started

    def install(self, events: Any) -> None:
        super().install(events)
        # torch.cuda.amp.GradScaler subclasses torch.amp.GradScaler without overriding these methods;
        # step() calls unscale_() through the instance, so a scaler.step() that unscales is seen too
        events.intercept("torch.amp.GradScaler.scale", post=self._scale)
        events.intercept("torch.amp.GradScaler.unscale_", post=self._unscale)
        for target, (name, threshold) in _CLIPS.items():
            events.intercept(target, pre=self._clip_pre, post=self._clip_post(name, threshold))

    # -- the scaled loss and its backward

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._optimizers.add(optimizer)

    def _scale(self, args: tuple, kwargs: dict, result: Any) -> None:
        scaler, outputs = args[0], argument(args, kwargs, 1, "outputs")
        if result is outputs or not scaler.is_enabled():
            return  # a disabled scaler hands the loss back unchanged
        for t in _tensors(result):
            if t.requires_grad:
                self._outputs[id(t)] = (weakref.ref(t), weakref.ref(scaler))
        if len(self._outputs) > _OUTPUTS:
            self._drop_dead_outputs()

    def _drop_dead_outputs(self) -> None:
        for key in [k for k, (ref, _) in self._outputs.items() if ref() is None]:
            del self._outputs[key]

    def on_backward_pre(self, tensors: Any, retain_graph: Any, create_graph: Any) -> None:
        self._before = None
        if not self._outputs:
            return
        self._drop_dead_outputs()
        scalers = set()
        for root in tensors if isinstance(tensors, (tuple, list)) else (tensors,):
            entry = self._outputs.get(id(root))
            if entry is None or entry[0]() is not root:
                return  # a root that no scaler multiplied
            scalers.add(entry[1]())
        if len(scalers) != 1:
            return
        scale = getattr(scalers.pop(), "_scale", None)
        import torch

        if not isinstance(scale, torch.Tensor):
            return
        self._scaled = _Scaled(self.site(), scale.detach().clone())
        params = {id(p): p for opt in list(self._optimizers) for p in optimizer_params(opt)}
        self._before = [(p, g, -1 if g is None else g._version) for p in params.values() for g in (p.grad,)]

    def on_backward_post(self) -> None:
        before, self._before = self._before, None
        if before is None:
            return
        scaled = self._scaled
        for p, grad, version in before:
            g = p.grad
            if g is not None and (g is not grad or g._version != version):  # this backward wrote it
                self._marks[id(p)] = _Mark(weakref.ref(p), weakref.ref(g), g._version, scaled)

    # -- what takes the scale off the gradients

    def _unscale(self, args: tuple, kwargs: dict, result: Any) -> None:
        # in place, without moving the gradients' version counters: only this call says it happened
        optimizer = argument(args, kwargs, 1, "optimizer")
        if self._marks and optimizer is not None:
            for p in optimizer_params(optimizer):
                self._marks.pop(id(p), None)

    # -- the clip

    def _clip_pre(self, args: tuple, kwargs: dict) -> None:
        self._clipping = None
        if not self._marks:
            return
        live = []
        for key, mark in list(self._marks.items()):
            p, g = mark.param(), mark.grad()
            if p is None or g is None or p.grad is not g or g._version != mark.version:
                del self._marks[key]  # zeroed, replaced, or written again since the scaled backward
                continue
            live.append((g, mark.version, mark.scaled))
        self._clipping = live

    def _clip_post(self, name: str, threshold: str) -> Callable[..., None]:
        def post(args: tuple, kwargs: dict, result: Any) -> None:
            live, self._clipping = self._clipping, None
            if not live:
                return
            # the clip wrote these in place (clip_grad_norm_ multiplies every gradient, clip_grad_value_ clamps)
            clipped = [scaled for g, version, scaled in live if g._version != version]
            if not clipped:
                return
            site = self.site()
            if site is None or (site.path, site.line) in self._reported:
                return  # reported there already: no second read of the scale
            limit = _number(argument(args, kwargs, 1, threshold))
            if limit is None or not math.isfinite(limit):
                return  # max_norm=inf: a norm measured for a log, nothing clipped whatever the scale
            scaled = clipped[0]
            scale = float(scaled.scale)
            if scale == 1.0:
                return  # the gradients are the true ones
            self.report(site,
                        f"{name}() clipped {plural(len(clipped), 'gradient')} that still carried the GradScaler's "
                        f"scale factor {scale!r} from the scaled backward() {self._where(scaled.site, site)}, "
                        "with no scaler.unscale_() of their optimizer since: the threshold was applied to the "
                        "scaled gradients, so on the true gradients it became "
                        f"{threshold}/scale = {limit!r}/{scale!r} = {limit / scale:.3g}; call "
                        "scaler.unscale_(optimizer) before clipping")

        post.__self__ = self  # type: ignore[attr-defined]
        return post

    def _where(self, backward: Site | None, clip: Site) -> str:
        if backward is None:
            return "before it"
        if backward.path == clip.path:
            return f"at line {backward.line}"
        from pytest_torchcheck.watch.sites import display_path

        return f"at {display_path(backward.path, self.events.sites.cwd)}:{backward.line}"

    def finish(self) -> None:
        self._outputs.clear()
        self._marks.clear()
        self._before = self._clipping = None


def _tensors(value: Any) -> list[Any]:
    """The tensors ``scale()`` returned: one, or those of a (nested) list or tuple; a lazy ``map`` is left
    alone (reading it would consume the program's values)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return None
