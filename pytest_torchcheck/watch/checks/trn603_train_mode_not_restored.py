"""TRN603 at run time: after an evaluation left a model in eval mode, an optimizer trained it in eval mode."""

from __future__ import annotations

import sys
import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.checks._common import (TopLevel, describe_layers, mode_layers, probe_graph,
                                                    user_frame)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.checks._common import Probe
    from pytest_torchcheck.watch.sites import Site


@record
class _Mode:
    switched: Site | None  # the eval() / train(False) call that turned training off
    frame: tuple[int, Any]  # (id, code) of the frame that made that call, to tell whether it has returned
    function: str
    evaluated: bool = False  # a forward without autograd ran in eval mode since
    trained: Site | None = None  # an eval-mode forward that a backward went through since the last step


def _running(frame: tuple[int, Any]) -> bool:
    """Whether the frame identified by ``frame`` is still on the stack."""
    f = sys._getframe(1)
    while f is not None:
        if id(f) == frame[0] and f.f_code is frame[1]:
            return True
        f = f.f_back
    return False


class TrainModeNotRestored(TopLevel):
    """
    Observed, per model with dropout (`p > 0`) or batch/instance norm tracking running statistics: a call
    of its `eval()` (or `train(False)`) switched it from training to eval mode inside a function that
    then returned (an evaluation helper), the model ran without autograd in eval mode (the evaluation),
    and then, with no `train()` since, the model called from your code in eval mode had its output
    backpropagated and an optimizer stepped its parameters: it kept training with dropout off and batch
    norm frozen. Reported at the forward that was trained, naming the `eval()` call. Never reported: a
    model put in eval mode by the function that goes on to train it (deliberate training in eval mode),
    a model in training mode whose batch-norm layers were set to eval (frozen batch norm during
    fine-tuning), a model never evaluated in between, a model without mode-dependent layers.
    """

    CODE = "TRN603"
    NAME = "train-mode-not-restored"
    SEVERITY = "warning"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._modes: weakref.WeakKeyDictionary[Any, _Mode] = weakref.WeakKeyDictionary()
        self._before: list[tuple[int, bool]] = []  # (id, training flag) of each module whose eval()/train() runs

    def install(self, events: Any) -> None:
        super().install(events)
        for name in ("eval", "train"):
            events.intercept(f"torch.nn.Module.{name}", pre=self._mode_pre, post=self._mode_post, direct=True)

    def _mode_pre(self, args: tuple, kwargs: dict) -> None:
        if args:
            self._before.append((id(args[0]), bool(getattr(args[0], "training", False))))

    def _mode_post(self, args: tuple, kwargs: dict, result: Any) -> None:
        module = args[0] if args else None
        was = False
        while self._before:  # a call that raised left its entry: skipped
            key, flag = self._before.pop()
            if key == id(module):
                was = flag
                break
        if module is None or not hasattr(module, "training"):
            return
        if module.training:
            self._modes.pop(module, None)  # back in training mode
        elif was:
            frame = user_frame(self.events.sites)
            # the model class's own train()/eval() override (its super().train(mode)) is not where it was asked
            while frame is not None and frame.f_code.co_name in ("train", "eval") and \
                    frame.f_locals.get("self") is module:
                frame = user_frame(self.events.sites, frame=frame.f_back)
            if frame is not None:
                import os

                from pytest_torchcheck.watch.sites import Site

                site = Site(os.path.abspath(frame.f_code.co_filename), frame.f_lineno, 1, frame.f_lineno, 2)
                self._modes[module] = _Mode(site, (id(frame), frame.f_code), frame.f_code.co_name)

    def on_top_pre(self, module: Any, args: Any) -> None:
        mode = self._modes.get(module) if not module.training else None
        if mode is None:
            return
        import torch

        if not torch.is_grad_enabled():
            mode.evaluated = True

    def on_top_post(self, module: Any, args: Any, output: Any) -> None:
        mode = self._modes.get(module) if not module.training else None
        if mode is None or not mode.evaluated or mode.trained is not None:
            return
        import torch

        if not torch.is_grad_enabled() or _running(mode.frame):
            return
        if not any(not m.training for m in mode_layers(module)):
            return
        site = self.site()
        if site is not None:
            probe_graph(output, (weakref.ref(module), site), traversed=self._backpropagated)

    def _backpropagated(self, probe: Probe) -> None:
        ref, site = probe.data
        module = ref()
        mode = self._modes.get(module) if module is not None else None
        if mode is not None and mode.trained is None:
            mode.trained = site

    def on_step_post(self, optimizer: Any) -> None:
        for module, mode in list(self._modes.items()):
            if mode.trained is None:
                continue
            site, mode.trained = mode.trained, None
            ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
            if not any(id(p) in ids for p in module.parameters()):
                continue
            kind = type(module).__name__
            where = (f"{mode.switched.shown()} (in {mode.function}())" if mode.switched is not None
                     else f"{mode.function}()")
            layers = describe_layers([m for m in mode_layers(module) if not m.training])
            if self.report(site,
                           f"{kind} was trained in eval mode: eval() at {where} switched it off training "
                           f"mode, it was evaluated, and then this forward was backpropagated and the optimizer "
                           f"stepped its parameters with no train() call since, so its {layers} ran as in "
                           f"evaluation (dropout off, batch norm frozen); call model.train() before training"):
                del self._modes[module]
