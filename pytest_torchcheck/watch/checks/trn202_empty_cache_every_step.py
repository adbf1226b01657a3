"""TRN202 at run time: ``torch.cuda.empty_cache()`` called from one line in every optimizer step."""

from __future__ import annotations

import weakref

from lint_rules.records import factory, record
from pytest_torchcheck.watch.check import Check, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

MIN_STEPS = 3


@record
class _Calls:
    site: Site
    calls: int = 0
    steps: dict = factory(dict)  # optimizer serial -> the step counts the calls saw


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
        self._serial: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._steps: dict[int, int] = {}  # optimizer serial -> steps so far
        self._calls: dict[tuple[str, int], _Calls] = {}

    def on_optimizer_created(self, optimizer: Any) -> None:
        serial = self._serial[optimizer] = len(self._steps)
        self._steps[serial] = 0

    def on_step_post(self, optimizer: Any) -> None:
        serial = self._serial.get(optimizer)
        if serial is not None:
            self._steps[serial] += 1

    def on_empty_cache(self) -> None:
        site = self.site()
        if site is None:
            return
        calls = self._calls.get((site.path, site.line))
        if calls is None:
            calls = self._calls[(site.path, site.line)] = _Calls(site)
        calls.calls += 1
        for serial, steps in self._steps.items():
            calls.steps.setdefault(serial, set()).add(steps)

    def finish(self) -> None:
        for calls in self._calls.values():
            for serial, seen in calls.steps.items():
                total = self._steps[serial]
                run = sorted(seen)
                if (len(run) >= MIN_STEPS and run[-1] - run[0] == len(run) - 1 and run[-1] >= total - 1
                        and total >= MIN_STEPS):
                    self.report(calls.site,
                                f"torch.cuda.empty_cache() ran {plural(calls.calls, 'time')} from this line, in each of "
                                f"{len(run)} consecutive optimizer steps (of {total}): every step pays a "
                                "device sync and the allocator's cache is rebuilt")
                    break
