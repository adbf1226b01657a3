"""TRN107 at run time: ``backward(retain_graph=True)`` kept a graph that no later backward went through."""

from __future__ import annotations

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

MAX_NODES = 200_000  # a larger graph is not compared (no finding): the walk would cost more than a step


@record
class _Retained:
    site: Site | None
    roots: list  # the graph's root nodes, held until the next backward
    nodes: dict  # its operations by id, held so that their ids stay theirs while compared
    steps: int  # the watch's step count at that backward


def _roots(tensors: Any) -> list[Any]:
    import torch

    tensors = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
    return [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]


def _walk(roots: list[Any], stop: dict | None = None) -> dict | bool | None:
    """The operations reachable from ``roots``, by id; with ``stop``, True as soon as one is in it (False
    if none is). None when the graph is larger than :data:`MAX_NODES`."""
    seen: dict[int, Any] = {}
    todo = list(roots)
    while todo:
        node = todo.pop()
        key = id(node)
        if key in seen or type(node).__name__ == "AccumulateGrad":
            continue
        if stop is not None and key in stop:
            return True
        seen[key] = node
        if len(seen) > MAX_NODES:
            return None
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return False if stop is not None else seen


class RetainedGraphUnused(Check):
    """
    Observed: a backward with ``retain_graph=True`` (and without ``create_graph``), then an optimizer
    step, then the next backward, whose graph shares no operation with the retained one (walked from
    both roots; the parameters' own gradient accumulators, which every iteration shares, do not count).
    A second backward through the retained graph before the step, or through what is left of it after
    (a recurrent state carried across steps), is never reported. Until the next backward the retained
    graph's root is held, so that its operations keep their identity while they are compared.
    """

    CODE = "TRN107"
    NAME = "retain-graph-in-training-loop"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._retained: _Retained | None = None

    def on_backward_pre(self, tensors: Any, retain_graph: Any, create_graph: Any) -> None:
        roots = None
        retained, self._retained = self._retained, None
        if retained is not None and self.events.steps > retained.steps:
            roots = _roots(tensors)
            if _walk(roots, retained.nodes) is False:
                later = self.site()
                steps = self.events.steps - retained.steps
                self.report(retained.site,
                            f"backward(retain_graph=True) kept a graph of {plural(len(retained.nodes), 'operation')} "
                            f"alive, and the next backward()"
                            f"{f' (line {later.line})' if later is not None else ''}, after "
                            f"{plural(steps, 'optimizer step')}, did not go through it: its saved tensors were kept for nothing")
        if retain_graph and not create_graph:
            roots = _roots(tensors) if roots is None else roots
            nodes = _walk(roots) if roots else None
            if nodes:
                self._retained = _Retained(self.site(), roots, nodes, self.events.steps)

    def finish(self) -> None:
        self._retained = None
