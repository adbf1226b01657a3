"""TRN302 at run time: a shuffling ``DistributedSampler`` gave two training passes the same order."""

from __future__ import annotations

import operator
import weakref

from lint_rules.records import factory, record
from pytest_torchcheck.watch.check import Check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site


@record
class _Pass:
    """One iteration of a sampler: the seed of its order, where it began, and how it was consumed."""

    key: tuple  # (epoch, seed): the shuffle's order
    site: Site | None  # the statement that iterated it (``for x, y in loader:``)
    indices: Any  # the iterator the sampler returned, to see how far it has been read
    left: int | None = None  # indices left to read at the last optimizer step
    trained: int = 0  # optimizer steps with indices read between them and the one before


@record
class _Sampler:
    built: Site | None
    passes: list = factory(list)  # the keys of its passes that trained
    current: _Pass | None = None
    reported: bool = False


class SamplerEpochRepeated(Check):
    """
    Observed, per `DistributedSampler` with `shuffle=True`: its `epoch` and `seed` each time it is
    iterated (each `for batch in loader:`), and whether optimizer steps ran while that pass was being
    read (indices read between two steps: a training pass). When two training passes of one sampler had
    the same epoch and seed, the second replayed the first's order: reported at the statement that
    iterated it, naming where the sampler was built. `set_epoch()` with a new value before each epoch,
    `shuffle=False`, a sampler that only evaluates (no step while it is read), and iterating twice in
    one epoch without training are never reported; nor is a pass shorter than two steps.
    """

    CODE = "TRN302"
    NAME = "distributed-sampler-without-set-epoch"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._samplers: weakref.WeakKeyDictionary[Any, _Sampler] = weakref.WeakKeyDictionary()

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.utils.data.distributed.DistributedSampler.__init__", post=self._built)
        events.intercept("torch.utils.data.distributed.DistributedSampler.__iter__", post=self._iterated)

    def _built(self, args: tuple, kwargs: dict, result: Any) -> None:
        sampler = args[0]
        if sampler not in self._samplers:  # a subclass's __init__ runs ours through super()
            self._samplers[sampler] = _Sampler(self.construction_site(sampler))

    def _iterated(self, args: tuple, kwargs: dict, result: Any) -> None:
        sampler = args[0]
        state = self._samplers.get(sampler)
        if state is None or not getattr(sampler, "shuffle", False):
            return
        self._close(state)
        key = (getattr(sampler, "epoch", None), getattr(sampler, "seed", None))
        state.current = _Pass(key, self.site(), result)

    def on_step_post(self, optimizer: Any) -> None:
        for sampler, state in list(self._samplers.items()):
            current = state.current
            if current is None:
                continue
            left = operator.length_hint(current.indices, -1)
            if left < 0:  # an iterator that cannot say how far it was read: nothing to conclude
                state.current = None
                continue
            if current.left is not None and left < current.left:
                current.trained += 1
            current.left = left
            if current.trained == 1:
                self._trained(sampler, state, current)
            if left == 0:  # read to the end: its pass is over
                self._close(state)

    def _trained(self, sampler: Any, state: _Sampler, current: _Pass) -> None:
        if current.key in state.passes and not state.reported:
            state.reported = True
            epoch, seed = current.key
            built = f" (built at line {state.built.line})" if state.built is not None else ""
            count = state.passes.count(current.key) + 1
            self.report(current.site,
                        f"this loop trained on a DistributedSampler{built} whose shuffle had epoch {epoch} and "
                        f"seed {seed} in {count} training passes: set_epoch() did not change it, so each "
                        "pass visited the samples in the same order on every rank")
        state.passes.append(current.key)

    def _close(self, state: _Sampler) -> None:
        state.current = None  # drops the iterator: its indices are not kept

    def finish(self) -> None:
        self._samplers.clear()
