"""TRN904 (runtime only): a loss or the gradients an optimizer applied were NaN or Inf; names the first module
whose output turned non-finite from finite inputs."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import optimizer_params, plural
from pytest_torchcheck.watch.checks._common import TopLevel, tensors_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site


@record
class _Origin:
    site: Site | None
    module: str  # ``LogScale (log_scale in LogScaleNet)``
    where: str  # ``output[0]``
    counts: tuple[int, int]  # NaN, Inf
    numel: int


class NonFiniteValues(TopLevel):
    """
    Observed: a `backward()` of a loss that holds NaN or Inf, or an optimizer `step()` whose gradients hold
    NaN or Inf. Reported at the line that called the first module (in the forward passes since the
    previous backward) whose output held a NaN or an Inf while all its inputs were finite, naming it;
    when no module did, at the `backward()` or `step()` itself. Reported once per run: the first
    non-finite value is the one to explain. Never reported while a `GradScaler` is in use (mixed
    precision skips steps with overflowing gradients by design), nor for NaN or Inf inside a forward
    that leaves the loss and the gradients finite (an attention mask of `-inf`).

    Opt-in (not run by default): it checks every module's output in every forward with autograd, and
    every gradient before every step, each costing a reduction and a host sync; select it with
    `--select TRN904`.
    """

    CODE = "TRN904"
    NAME = "non-finite-values"
    SEVERITY = "error"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph
    DEFAULT = False
    SUMMARY = "A loss or the gradients an optimizer applied hold NaN or Inf"
    DOC = """\
## What it does
Watches training at run time for a loss that is NaN or Inf when `backward()` runs, or gradients that are
NaN or Inf when an optimizer steps, and names the first module whose output turned non-finite from
finite inputs in that step's forward pass (the line that called it).

## Why is this bad?
One NaN in a loss spreads to every gradient and, after one `step()`, to every parameter: the model is
destroyed, and nothing raises. `log(0)`, `sqrt(0)` in a backward, division by a zero norm and overflow
in half precision are the usual causes; the module that first produced the value is where to look.

## Example
```python
class LogScale(nn.Module):
    def forward(self, x):
        return torch.log(x)  # x comes from a ReLU: log(0) = -inf
```

Use instead:
```python
class LogScale(nn.Module):
    def forward(self, x):
        return torch.log1p(x)
```
"""

    def __init__(self) -> None:
        super().__init__()
        self._origin: _Origin | None = None
        self._scaler = False
        self._done = False
        self._root: Any = None  # a weak reference to the running top-level module, to name its layers

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.amp.GradScaler.scale", pre=self._scaled)

    def _scaled(self, args: tuple, kwargs: dict) -> None:
        self._scaler = True

    def on_top_pre(self, module: Any, args: Any) -> None:
        # weakly: a strong reference would keep a DDP wrapper, and its process group's threads, alive
        self._root = weakref.ref(module)

    def on_forward_post(self, module: Any, args: Any, output: Any) -> None:
        root = self._root() if self._root is not None else None
        super().on_forward_post(module, args, output)
        if self._done or self._origin is not None or self._scaler:
            return
        import torch

        if not torch.is_grad_enabled():
            return
        from pytest_torchcheck.anomaly import nonfinite_counts, first_nonfinite

        bad = first_nonfinite(output)
        if bad is None or first_nonfinite(args) is not None:
            return
        path, t = bad
        self._origin = _Origin(self.site(), _name(root, module), f"output{path}", nonfinite_counts(t), t.numel())

    def on_backward_pre(self, tensors: Any, retain_graph: Any, create_graph: Any) -> None:
        origin, self._origin = self._origin, None
        if self._done or self._scaler:
            return
        from pytest_torchcheck.anomaly import nonfinite_counts, first_nonfinite

        bad = first_nonfinite(tensors_of(tensors))
        if bad is None:
            return
        nan, inf = nonfinite_counts(bad[1])
        what = f"the loss given to backward() holds {_counts(nan, inf)}"
        self._conclude(origin, what)

    def on_step_pre(self, optimizer: Any) -> None:
        origin, self._origin = self._origin, None
        if self._done or self._scaler:
            return
        from pytest_torchcheck.anomaly import first_nonfinite

        grads = [p.grad for p in optimizer_params(optimizer) if p.grad is not None]
        bad = [g for g in grads if first_nonfinite(g) is not None]
        if bad:
            self._conclude(origin, f"step() applied gradients of which {len(bad)} of "
                                   f"{plural(len(grads), 'parameter gradient')} hold NaN or Inf")

    def _conclude(self, origin: _Origin | None, what: str) -> None:
        self._done = True
        if origin is not None and origin.site is not None:
            self.report(origin.site,
                        f"{what}; the first non-finite value came from {origin.module}, called here: its "
                        f"{origin.where} held {_counts(*origin.counts)} of {plural(origin.numel, 'element')} "
                        f"while its inputs were finite (log/sqrt/division at 0, exp or half-precision overflow)")
        else:
            self.report(self.site(), f"{what}; no module turned finite inputs into NaN or Inf before it: "
                                     f"the data, an operation outside the modules (the loss function, a "
                                     f"functional op) or the backward produced it")


def _counts(nan: int, inf: int) -> str:
    parts = [f"{nan} NaN" if nan else "", f"{inf} Inf" if inf else ""]
    return " and ".join(p for p in parts if p) or "non-finite values"


def _name(root: Any, module: Any) -> str:
    """``LogScale (log_scale in LogScaleNet)``: its class, and its name inside the top-level module."""
    kind = type(module).__name__
    if root is None or root is module:
        return kind
    for name, m in root.named_modules():
        if m is module:
            return f"{kind} ({name} in {type(root).__name__})"
    return kind
