"""TRN602 at run time: a trained model ran without autograd while still in training mode."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import plural
from pytest_torchcheck.watch.checks._common import (TopLevel, Trained, describe_layers, mode_layers,
                                                    module_caller, result_discarded)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site


@record
class _Seen:
    site: Site
    module: Any  # a weak reference to the model
    layers: str  # its mode-dependent layers that were in training mode, described
    calls: int = 0


class EvaluationWithoutEvalMode(TopLevel):
    """
    Observed: a model called from your code (a top-level forward, not a layer inside another model's
    forward) while autograd was off (`torch.no_grad()`, `torch.inference_mode()`) and the model was in
    training mode, with dropout layers (`p > 0`) or batch/instance norm layers tracking running
    statistics in training mode too, and whose result was used, outside a training step (after an
    optimizer's `step()` and before the next `zero_grad()`, or before any); and an optimizer steps this
    model's parameters at some point of the run. Dropout then drops activations and batch norm normalises with
    the batch's statistics and folds this data into its running ones: what is measured is not the model.
    Never reported: a model no optimizer steps (an EMA or teacher copy, a target network), a forward
    whose result is thrown away (`model(x)` alone as a statement: a batch-norm recalibration or warm-up
    pass), a model whose batch norm has `momentum=None` (a cumulative recalibration, as
    `torch.optim.swa_utils.update_bn` does), a model called by torch's own code, and a model whose
    mode-dependent layers are all in eval mode (frozen batch norm during fine-tuning), a forward between
    a `zero_grad()` and the next `step()` (targets or pseudo-labels computed inside a training step; a
    program that clears gradients right after each step is therefore never reported).
    """

    CODE = "TRN602"
    NAME = "evaluation-without-eval-mode"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._trained = Trained()
        # between a zero_grad() and the next step(): a forward there belongs to a training step (pseudo-labels
        # or targets computed by the model itself), not to an evaluation
        self._in_step = False
        self._pending: dict[tuple[str, int, int], _Seen] = {}  # by site and model, seen before the model was known to be trained

    def on_top_pre(self, module: Any, args: Any) -> None:
        import torch

        if torch.is_grad_enabled() or not module.training or self._in_step:
            return
        layers = [m for m in mode_layers(module) if m.training]
        if not layers or any(getattr(m, "momentum", 0.1) is None for m in layers):
            return
        from pytest_torchcheck.watch.sites import LIBRARY

        sites = self.events.sites
        caller = module_caller(sites)
        if caller is None or sites.kind(caller.f_code.co_filename) == LIBRARY or result_discarded(caller):
            return
        site = self.site()
        if site is None:
            return
        key = (site.path, site.line, id(module))
        seen = self._pending.get(key)
        if seen is None or seen.module() is not module:
            seen = self._pending[key] = _Seen(site, weakref.ref(module), describe_layers(layers))
        seen.calls += 1
        if self._trained.ids:
            self._decide()

    def on_grads_cleared(self, owner: Any) -> None:
        self._in_step = True

    def on_step_post(self, optimizer: Any) -> None:
        self._in_step = False
        self._trained.stepped(optimizer)
        if self._pending:
            self._decide()

    def finish(self) -> None:
        self._decide()
        self._pending.clear()

    def _decide(self) -> None:
        for key, seen in list(self._pending.items()):
            module = seen.module()
            if module is None:
                del self._pending[key]
            elif self._trained.trained(module):
                del self._pending[key]
                kind = type(module).__name__
                self.report(seen.site,
                            f"{kind} ran without autograd but in training mode ({plural(seen.calls, 'call')} "
                            f"here), its {seen.layers} in training mode: dropout dropped activations and "
                            f"batch norm used the batch's statistics and folded this data into its running "
                            f"ones, while an optimizer trains this model; call model.eval() before evaluating "
                            f"it (and model.train() after)")
