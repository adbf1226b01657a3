"""TRN203 at run time: an optimizer built again and again for the same parameters while training goes on."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

REPEATS = 3  # constructions in a row at one site, each carrying on from the one before
SAMPLE = 8  # parameters whose version counters stand for all of them


@record
class _Made:
    site: Site
    params: dict  # id(param) -> weakref to it
    sample: list  # weakrefs to up to SAMPLE of them, first and last included
    steps: int = 0
    state: tuple = ()  # the names of the tensor state its steps left
    versions: tuple = ()  # the sample's version counters after its last step
    chain: int = 1  # constructions in a row at its site, each carrying on from the one before
    steps_before: tuple = ()  # the step counts of the earlier ones in the chain


def _same_params(earlier: _Made, later: _Made) -> bool:
    if earlier.params.keys() != later.params.keys():
        return False
    return all(earlier.params[k]() is not None and earlier.params[k]() is later.params[k]() for k in later.params)


def _versions(sample: list) -> tuple:
    return tuple(p._version if p is not None else None for p in (ref() for ref in sample))


class OptimizerRecreated(Check):
    """
    Observed, per construction site: the parameters each optimizer holds (by identity), its steps,
    whether they left state (a tensor in ``optimizer.state``: momentum, Adam moments), and the
    parameters' version counters after its last step. A new optimizer carries on from the previous
    one built at the same line when it holds the same parameters, the previous one stepped and had
    state, and nothing wrote the parameters in place since its last step (a re-initialisation or a
    checkpoint load does): training went on and the state restarted. Reported at the third
    construction of such a chain. A new optimizer per trial of a sweep that re-initialises the model,
    two phases, or a stateless optimizer (plain SGD) is never reported.
    """

    CODE = "TRN203"
    NAME = "optimizer-created-in-loop"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._made: weakref.WeakKeyDictionary[Any, _Made] = weakref.WeakKeyDictionary()
        self._last: dict[tuple[str, int], _Made] = {}  # the latest optimizer built at each site

    def on_optimizer_created(self, optimizer: Any) -> None:
        site = self.construction_site(optimizer)
        if site is None:
            return
        params = optimizer_params(optimizer)
        picks = sorted({round(i * (len(params) - 1) / (SAMPLE - 1)) for i in range(SAMPLE)}) if params else []
        made = self._made[optimizer] = _Made(site, {id(p): weakref.ref(p) for p in params},
                                             [weakref.ref(params[i]) for i in picks])
        previous = self._last.get((site.path, site.line))
        self._last[(site.path, site.line)] = made
        if previous is None or not made.params or not previous.steps or not previous.state \
                or not _same_params(previous, made) or _versions(previous.sample) != previous.versions:
            return
        made.chain = previous.chain + 1
        made.steps_before = (*previous.steps_before, previous.steps)
        if made.chain >= REPEATS:
            steps = sorted(set(made.steps_before))
            each = plural(steps[0], "step") if len(steps) == 1 else f"{steps[0]} to {steps[-1]} steps"
            self.report(site,
                        f"{type(optimizer).__name__} constructed here {made.chain} times in a row for the same "
                        f"{plural(len(made.params), 'parameter')} while training went on (each earlier one "
                        f"took {each}; nothing re-initialised the parameters in between): its state "
                        f"({', '.join(previous.state)}) restarted each time")

    def on_step_post(self, optimizer: Any) -> None:
        import torch

        made = self._made.get(optimizer)
        if made is None:
            return
        made.steps += 1
        made.versions = _versions(made.sample)
        if not made.state:
            names = {k for per_param in optimizer.state.values() if isinstance(per_param, dict)
                     for k, v in per_param.items() if isinstance(v, torch.Tensor) and k != "step"}
            made.state = tuple(sorted(names))
