"""TRN101 at run time: ``step()`` applied gradients that a ``zero_grad()`` cleared after the last backward."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, cleared_ids, nonzero, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site


@record
class _Cleared:
    site: Site | None  # the zero_grad() call
    backwards: int  # the watch's backward count at the clear
    params: int  # how many gradients it cleared that held values


@record
class _State:
    backwards: int  # the backward count at the optimizer's creation or last step
    cleared: _Cleared | None = None


class StepAfterGradsCleared(Check):
    """
    Observed: a ``zero_grad()`` (of the optimizer, or of a module holding its parameters) ran after a
    ``backward()`` that came after the optimizer's previous step, while some of its gradients held
    non-zero values; no ``backward()`` ran between that clear and the next ``step()``; and at that step
    every gradient of the optimizer was ``None`` or zero. The step applied nothing the backward computed.
    """

    CODE = "TRN101"
    NAME = "zero-grad-between-backward-and-step"
    SEVERITY = "error"

    def __init__(self) -> None:
        super().__init__()
        self._state: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._state[optimizer] = _State(self.events.backwards)

    def on_grads_cleared(self, owner: Any) -> None:
        ids = None
        for optimizer, state in list(self._state.items()):
            if state.cleared is not None or self.events.backwards == state.backwards:
                continue  # no backward since this optimizer's last step: clearing first is the right order
            if ids is None:
                ids = cleared_ids(owner)
            grads = [p.grad for p in optimizer_params(optimizer) if id(p) in ids and p.grad is not None]
            held = sum(nonzero(grads, unknown=False)) if grads else 0
            if held:
                state.cleared = _Cleared(self.site(), self.events.backwards, held)

    def on_step_pre(self, optimizer: Any) -> None:
        state = self._state.get(optimizer)
        if state is None or state.cleared is None or state.cleared.backwards != self.events.backwards:
            return  # nothing cleared, or a backward since the clear
        params = optimizer_params(optimizer)
        grads = [p.grad for p in params if p.grad is not None]
        if grads and any(nonzero(grads, unknown=True)):
            return
        step = self.site()
        where = f"step() at line {step.line}" if step is not None else "step()"
        state_of = "None" if not grads else "zero" if len(grads) == len(params) else "None or zero"
        self.report(state.cleared.site,
                    f"zero_grad() cleared {plural(state.cleared.params, 'parameter gradient')} after backward() and "
                    f"before {where}: that step saw all {len(params)} gradients {state_of} and applied nothing "
                    "the backward computed")

    def on_step_post(self, optimizer: Any) -> None:
        state = self._state.get(optimizer)
        if state is not None:
            state.backwards = self.events.backwards
            state.cleared = None
