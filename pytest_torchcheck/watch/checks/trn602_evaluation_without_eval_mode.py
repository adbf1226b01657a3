"""TRN602 at run time: a trained model ran without autograd while still in training mode."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import plural
from pytest_torchcheck.watch.checks._common import (TopLevel, Trained, argument, describe_layers, mode_layers,
                                                    module_caller, result_discarded, user_frame)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

# the functional dropouts, (input, p, training, ...) all: a forward calling one with training=self.training
# drops activations in training mode as an nn.Dropout layer would
FUNCTIONS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


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
    statistics in training mode too, or a functional dropout (`F.dropout(x, p, training=self.training)`,
    `p > 0`) that ran with `training` true from a method of a module in training mode that reads its
    `training` attribute, and whose result was used, outside a training step (after an
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
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._trained = Trained()
        # between a zero_grad() and the next step(): a forward there belongs to a training step (pseudo-labels
        # or targets computed by the model itself), not to an evaluation
        self._in_step = False
        self._pending: dict[tuple[str, int, int], _Seen] = {}  # by site and model, seen before the model was known to be trained
        # the top-level forward running now, a candidate that has no mode-dependent layer: its site, and whether
        # a functional dropout keyed on the mode dropped activations inside it
        self._candidate: tuple[Any, Site] | None = None
        self._functional = False

    def install(self, events: Any) -> None:
        super().install(events)
        for name in FUNCTIONS:
            events.intercept(f"torch.nn.functional.{name}", pre=self._dropout, direct=True)

    def _dropout(self, args: tuple, kwargs: dict) -> None:
        if self._candidate is None or not argument(args, kwargs, 2, "training", True):
            return
        if not argument(args, kwargs, 1, "p", 0.5):
            return
        import torch

        frame = user_frame(self.events.sites)
        owner = frame.f_locals.get("self") if frame is not None and "self" in frame.f_code.co_varnames else None
        # training=True written out (Monte Carlo dropout) ignores the mode, and eval() would not change it:
        # only a method that reads `.training` (training=self.training) follows the mode
        if isinstance(owner, torch.nn.Module) and owner.training and "training" in frame.f_code.co_names:
            self._functional = True

    def on_top_pre(self, module: Any, args: Any) -> None:
        import torch

        self._candidate = None
        if torch.is_grad_enabled() or not module.training or self._in_step:
            return
        layers = [m for m in mode_layers(module) if m.training]
        if any(getattr(m, "momentum", 0.1) is None for m in layers):
            return
        from pytest_torchcheck.watch.sites import LIBRARY

        sites = self.events.sites
        caller = module_caller(sites)
        if caller is None or sites.kind(caller.f_code.co_filename) == LIBRARY or result_discarded(caller):
            return
        site = self.site()
        if site is None:
            return
        if not layers:  # known only once the forward ran: whether a functional dropout followed the mode
            self._candidate, self._functional = (module, site), False
            return
        self._seen(module, site, describe_layers(layers))

    def on_top_post(self, module: Any, args: Any, output: Any) -> None:
        candidate, self._candidate = self._candidate, None
        if candidate is not None and candidate[0] is module and self._functional:
            self._seen(module, candidate[1], "functional dropout (training=self.training)")

    def _seen(self, module: Any, site: Site, layers: str) -> None:
        key = (site.path, site.line, id(module))
        seen = self._pending.get(key)
        if seen is None or seen.module() is not module:
            seen = self._pending[key] = _Seen(site, weakref.ref(module), layers)
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
