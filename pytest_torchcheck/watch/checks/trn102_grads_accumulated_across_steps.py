"""TRN102 at run time: ``step()`` applied gradients that still held those of the optimizer's previous step."""

from __future__ import annotations

import weakref

from lint_rules.records import factory, record
from pytest_torchcheck.watch.check import Check, cleared_ids, nonzero, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record
class _State:
    # id(param) -> (weakref to the param, weakref to the gradient a step applied), while it stays uncleared
    applied: dict = factory(dict)
    pending: dict = factory(dict)  # id(param) -> the gradient's version before the running backward
    accumulated: int = 0  # backward calls that added to applied gradients since the step


class GradsAccumulatedAcrossSteps(Check):
    """
    Observed, per parameter: after a step, its gradient tensor stayed the same object, was never zeroed
    (checked by value before each backward, so ``p.grad.zero_()`` and ``p.grad.data.zero_()`` count as
    a reset), no ``zero_grad()`` covering it ran, and a ``backward()`` accumulated into it in place; the
    next step of the same optimizer then applied it. Accumulating over micro-batches before one step is
    never reported: only gradients that a step already applied are followed. A backward that adds to
    another optimizer's stale gradients (a GAN's generator loss reaching the discriminator) is not
    reported either unless that optimizer then steps with them.
    """

    CODE = "TRN102"
    NAME = "missing-zero-grad"
    SEVERITY = "error"

    def __init__(self) -> None:
        super().__init__()
        self._state: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()
        self._done: weakref.WeakSet[Any] = weakref.WeakSet()  # optimizers already reported: no more work

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._state[optimizer] = _State()

    def on_step_post(self, optimizer: Any) -> None:
        state = self._state.get(optimizer)
        if state is None or optimizer in self._done:
            return
        state.applied = {id(p): (weakref.ref(p), weakref.ref(p.grad)) for p in optimizer_params(optimizer)
                         if p.grad is not None}
        state.pending = {}
        state.accumulated = 0

    def on_grads_cleared(self, owner: Any) -> None:
        ids = None
        for state in self._state.values():
            if state.applied:
                ids = cleared_ids(owner) if ids is None else ids
                for key in ids & state.applied.keys():
                    del state.applied[key]

    def _stale(self, state: _State) -> list[tuple[int, Any]]:
        """(id, gradient) of each parameter whose applied gradient is still there, unchanged in identity
        and not zeroed; the others are dropped."""
        live = []
        for key, (param_ref, grad_ref) in list(state.applied.items()):
            param, grad = param_ref(), grad_ref()
            if param is None or grad is None or param.grad is not grad:
                del state.applied[key]  # set to None or replaced: a reset
            else:
                live.append((key, grad))
        if live:
            for (key, _), held in zip(live, nonzero([g for _, g in live], unknown=False)):
                if not held:
                    del state.applied[key]  # zeroed in place: a reset
        return [(key, grad) for key, grad in live if key in state.applied]

    def on_backward_pre(self, tensors: Any, retain_graph: Any, create_graph: Any) -> None:
        for state in self._state.values():
            if state.applied:
                state.pending = {key: grad._version for key, grad in self._stale(state)}

    def on_backward_post(self) -> None:
        for state in self._state.values():
            if not state.pending:
                continue
            for key, version in state.pending.items():
                entry = state.applied.get(key)
                grad = entry[1]() if entry is not None else None
                param = entry[0]() if entry is not None else None
                if grad is not None and param is not None and param.grad is grad and grad._version != version:
                    state.accumulated += 1
                    break
            state.pending = {}

    def on_step_pre(self, optimizer: Any) -> None:
        state = self._state.get(optimizer)
        if state is None or not state.accumulated or not state.applied or optimizer in self._done:
            return
        stale = self._stale(state)
        if not stale:
            return
        total = sum(1 for p in optimizer_params(optimizer) if p.grad is not None)
        if self.report(self.site(),
                       f"step() applied gradients that still held those of this optimizer's previous step: "
                       f"{len(stale)} of {plural(total, 'parameter gradient')} were never cleared, and "
                       f"{plural(state.accumulated, 'backward() call')} added to them since that step"):
            self._done.add(optimizer)
