"""TRN202 at run time: ``torch.cuda.empty_cache()`` called from one line in every optimizer step."""

from __future__ import annotations

from pytest_torchcheck.watch.check import Check, plural
from pytest_torchcheck.watch.steps import EverySite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class EmptyCacheEveryStep(Check):
    """
    Observed, per call site and optimizer: the optimizer's step count at each call. When the calls of a
    site fall in at least three consecutive steps of an optimizer with none missed, up to its last step
    (or the one before), the site runs every step. A call once per epoch of several steps, or before and
    after training, is never reported. The verdict is taken when the program ends, with its totals.
    """

    CODE = "TRN202"
    NAME = "empty-cache-in-loop"
    SEVERITY = "warning"

    def __init__(self) -> None:
        super().__init__()
        self._sites = EverySite()

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._sites.optimizer_created(optimizer)

    def on_step_post(self, optimizer: Any) -> None:
        self._sites.stepped(optimizer)

    def on_empty_cache(self) -> None:
        site = self.site()
        if site is not None:
            self._sites.call(site)

    def finish(self) -> None:
        for calls, steps, total in self._sites.every_step():
            self.report(calls.site,
                        f"torch.cuda.empty_cache() ran {plural(calls.calls, 'time')} from this line, in each of "
                        f"{steps} consecutive optimizer steps (of {total}): every step pays a "
                        "device sync and the allocator's cache is rebuilt")
