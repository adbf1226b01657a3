"""TRN601 at run time: a trained model ran with autograd recording, and no backward ever used its output."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import plural
from pytest_torchcheck.watch.checks._common import TopLevel, Trained, probe_graph

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.checks._common import Probe
    from pytest_torchcheck.watch.sites import Site

REPEATS = 3  # a single probing forward (a shape check, a warm-up) is not an evaluation loop


@record
class _Calls:
    site: Site
    module: Any  # a weak reference to the model
    name: str  # the model's class name, for a report made after it is gone
    trained: bool = False  # an optimizer was seen stepping the model while it lived
    used: int = 0  # forwards whose graph autograd went through (as soon as it did)
    unused: int = 0  # forwards whose graph was freed without autograd going through it


class EvaluationWithoutNoGrad(TopLevel):
    """
    Observed: a model called from your code (a top-level forward, not a layer inside another model's
    forward) with autograd recording, at least 3 times at one line, each time with an output whose graph
    was freed without any `backward()` or `autograd.grad()` going through it, and never once with one
    that was backpropagated; and an optimizer steps this model's parameters at some point of the run.
    Each such call recorded a graph and kept its activations for a gradient never computed. Never
    reported: a forward under `torch.no_grad()` or `torch.inference_mode()`, a line where any forward
    was backpropagated (a training step, even one that skips a batch now and then), a forward whose
    graph a later backward uses (losses summed over several forwards), a model no optimizer steps (a
    target network, an EMA copy), a forward recomputed during a backward (activation checkpointing).
    A graph still alive when the program ends counts for nothing.
    """

    CODE = "TRN601"
    NAME = "evaluation-without-no-grad"
    SEVERITY = "warning"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._trained = Trained()
        self._calls: dict[tuple[str, int, int], _Calls] = {}
        self._recording = False

    def on_top_pre(self, module: Any, args: Any) -> None:
        import torch

        self._recording = torch.is_grad_enabled()

    def on_top_post(self, module: Any, args: Any, output: Any) -> None:
        if not self._recording or next(iter(module.parameters()), None) is None:
            return
        site = self.site()
        if site is None:
            return
        key = (site.path, site.line, id(module))
        calls = self._calls.get(key)
        if calls is None or calls.module() is not module:
            calls = self._calls[key] = _Calls(site, weakref.ref(module), type(module).__name__)
        if calls.used:  # a line that trains: nothing more to learn there
            return
        if not calls.trained and self._trained.trained(module):
            calls.trained = True
        probe_graph(output, calls, done=self._freed, traversed=self._traversed)

    @staticmethod
    def _traversed(probe: Probe) -> None:
        probe.data.used += 1  # counted at once: the line trains, whenever its graph is freed

    @staticmethod
    def _freed(probe: Probe) -> None:
        if not probe.traversed:
            probe.data.unused += 1

    def on_step_post(self, optimizer: Any) -> None:
        self._trained.stepped(optimizer)
        self._decide()

    def finish(self) -> None:
        import gc

        gc.collect()  # graphs kept by reference cycles are freed now, not after the program's end
        self._decide()
        self._calls.clear()

    def _decide(self) -> None:
        for key, calls in list(self._calls.items()):
            if calls.used or calls.unused < REPEATS:
                continue
            module = calls.module()
            if module is not None and self._trained.trained(module):
                calls.trained = True
            # the model may die with its last graphs (a main() returning): what was seen while it lived counts
            if not calls.trained:
                continue
            del self._calls[key]
            self.report(calls.site,
                        f"{calls.name} ran with autograd recording {plural(calls.unused, 'time')} "
                        f"here and no backward() went through its output any of those times: each call "
                        f"recorded a graph and kept its activations for a gradient never computed, while an "
                        f"optimizer trains this model; run it under torch.no_grad() or torch.inference_mode()")
