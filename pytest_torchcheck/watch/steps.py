"""Which call sites run in every optimizer step: the bookkeeping that "every step" checks share.

A check feeds :class:`EverySite` the optimizers it sees built and stepped, and each call it watches with
the user's site of the call; when the program ends, :meth:`EverySite.every_step` gives the sites whose
calls fell in at least :data:`MIN_STEPS` consecutive steps of one optimizer, none missed, up to its last
step (or the one before: a call after the last step's backward, before its step, counts). A call every N
steps, once per epoch of several steps, or before and after training, is never among them.
"""

from __future__ import annotations

import weakref

from lint_rules.records import factory, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

    from pytest_torchcheck.watch.sites import Site

MIN_STEPS = 3


@record
class Calls:
    """What one call site did: its calls, and per optimizer (by serial) the step counts they saw."""

    site: Site
    calls: int = 0
    steps: dict = factory(dict)  # optimizer serial -> the step counts the calls saw
    what: dict = factory(dict)  # whatever the check notes per call (a name -> count), in order


class EverySite:
    """The step counts of each optimizer, and of each call site's calls."""

    def __init__(self) -> None:
        self._serial: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._steps: dict[int, int] = {}  # optimizer serial -> steps so far
        self._calls: dict[tuple[str, int], Calls] = {}

    def optimizer_created(self, optimizer: Any) -> None:
        serial = self._serial[optimizer] = len(self._steps)
        self._steps[serial] = 0

    def stepped(self, optimizer: Any) -> None:
        serial = self._serial.get(optimizer)
        if serial is not None:
            self._steps[serial] += 1

    def call(self, site: Site, what: str = "") -> Calls:
        """Count one call at ``site`` (``what``: the kind of call, kept per site for the message)."""
        calls = self._calls.get((site.path, site.line))
        if calls is None:
            calls = self._calls[(site.path, site.line)] = Calls(site)
        calls.calls += 1
        calls.what[what] = calls.what.get(what, 0) + 1
        for serial, steps in self._steps.items():
            calls.steps.setdefault(serial, set()).add(steps)
        return calls

    def every_step(self) -> Iterator[tuple[Calls, int, int]]:
        """Each site that ran in every step (see the module's docstring), once: its calls, the number of
        consecutive steps they fell in, and the optimizer's total steps."""
        for calls in self._calls.values():
            for serial, seen in calls.steps.items():
                total = self._steps[serial]
                run = sorted(seen)
                if (len(run) >= MIN_STEPS and run[-1] - run[0] == len(run) - 1 and run[-1] >= total - 1
                        and total >= MIN_STEPS):
                    yield calls, len(run), total
                    break
