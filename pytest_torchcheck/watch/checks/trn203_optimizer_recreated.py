"""TRN203 at run time: an optimizer constructed again and again for the same parameters, one step each."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

REPEATS = 3  # constructions at one site, the two earlier ones with one step each


@record
class _Made:
    site: Site
    params: dict  # id(param) -> weakref to it
    steps: int = 0
    state: tuple = ()  # the names of the tensor state its first step left


def _same_params(earlier: _Made, later: _Made) -> bool:
    if earlier.params.keys() != later.params.keys():
        return False
    return all(earlier.params[k]() is not None and earlier.params[k]() is later.params[k]() for k in later.params)


class OptimizerRecreated(Check):
    """
    Observed, per construction site: the parameters each optimizer holds (by identity), how many steps it
    took, and whether its step left state (a tensor in ``optimizer.state``: momentum, Adam moments). When
    a site builds its third optimizer over the same parameters as the two before it, and each of those
    took exactly one step and had state, that state restarted every step. Building a new optimizer
    per training phase or per trial (many steps each), or a stateless one (plain SGD), is never reported.
    """

    CODE = "TRN203"
    NAME = "optimizer-created-in-loop"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._made: weakref.WeakKeyDictionary[Any, _Made] = weakref.WeakKeyDictionary()
        self._history: dict[tuple[str, int], list[_Made]] = {}

    def on_optimizer_created(self, optimizer: Any) -> None:
        site = self.construction_site(optimizer)
        if site is None:
            return
        made = self._made[optimizer] = _Made(site, {id(p): weakref.ref(p) for p in optimizer_params(optimizer)})
        history = self._history.setdefault((site.path, site.line), [])
        history.append(made)
        del history[:-REPEATS]
        if len(history) < REPEATS or not made.params:
            return
        earlier = history[:-1]
        chain = [*earlier, made]
        if all(e.steps == 1 and e.state for e in earlier) and \
                all(_same_params(a, b) for a, b in zip(chain, chain[1:])):
            self.report(site,
                        f"{type(optimizer).__name__} constructed here {len(chain)} times in a row for the same "
                        f"{plural(len(made.params), 'parameter')}, each one used for a single step(): its state "
                        f"({', '.join(earlier[-1].state)}) restarted every step")

    def on_step_post(self, optimizer: Any) -> None:
        import torch

        made = self._made.get(optimizer)
        if made is None:
            return
        made.steps += 1
        if made.steps == 1:
            names = {k for per_param in optimizer.state.values() if isinstance(per_param, dict)
                     for k, v in per_param.items() if isinstance(v, torch.Tensor) and k != "step"}
            made.state = tuple(sorted(names))
