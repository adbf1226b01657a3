"""pytest_torchcheck/watch/events.py: the wrappers the watch puts around torch leave the program's warnings
as they were unwatched, naming the caller's line and going through the filters in force."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

from pytest_torchcheck.watch import events
from pytest_torchcheck.watch.check import Check
from pytest_torchcheck.watch.events import call_attributed
from pytest_torchcheck.watch.watcher import Watcher


def _deprecated(x: int) -> int:
    warnings.warn("old spelling", FutureWarning, stacklevel=2)  # names its caller, as torch's do
    return x + 1


def _warns_here() -> None:
    warnings.warn("from inside", UserWarning, stacklevel=1)  # names this line, wherever it is called from


def _wrapped(function, *args):  # what every wrapper in events.py does around the original
    return call_attributed(function, args, {})


def _line(text: str) -> int:
    source = open(__file__).read().splitlines()
    return next(i for i, line in enumerate(source, 1) if text in line and "_line(" not in line)


def test_a_warning_meant_for_the_caller_names_the_callers_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _wrapped(_deprecated, 1) == 2  # <- caller
    assert [(w.category, str(w.message), w.filename, w.lineno) for w in caught] == [
        (FutureWarning, "old spelling", __file__, _line("# <- caller"))]


def test_a_warning_that_names_its_own_line_keeps_it() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _wrapped(_warns_here)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, _line("stacklevel=1)"))]


def test_the_filters_in_force_decide_what_is_shown() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FutureWarning, match="old spelling"):  # raised inside the call, as unwatched
            _wrapped(_deprecated, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        _wrapped(_deprecated, 1)
    assert caught == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # once per location: judged at the wrapper's, so once per message
        for _ in range(3):
            _wrapped(_deprecated, 1)  # <- repeated
        _wrapped(_deprecated, 1)
        _wrapped(_deprecated, 2)
    assert [w.lineno for w in caught] == [_line("# <- repeated")]


def test_calls_from_other_threads_are_made_as_they_come() -> None:
    caught: list = []

    def other() -> None:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            caught.append(_wrapped(_deprecated, 1))
            caught.extend((w.filename, str(w.message)) for w in seen)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    # the result as ever; the warning keeps the wrapper's line (catch_warnings is process-wide state)
    assert caught == [2, (events.__file__, "old spelling")]


class _Softmax(Check):
    CODE = "TRN998"

    def install(self, events) -> None:
        super().install(events)
        events.intercept("torch.nn.functional.softmax", pre=lambda args, kwargs: None)


def test_a_torch_warning_under_the_watch_names_the_programs_line() -> None:
    watcher = Watcher([])
    watcher.checks.append(_Softmax())
    with watcher, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.nn.functional.softmax is not _SOFTMAX  # wrapped
        torch.nn.functional.softmax(torch.ones(2, 3))  # <- no dim: torch warns, naming its caller
    assert [(w.category, w.filename, w.lineno) for w in caught] == [
        (UserWarning, __file__, _line("# <- no dim"))]
    assert "Implicit dimension choice for softmax" in str(caught[0].message)
    assert watcher.errors == []


_SOFTMAX = torch.nn.functional.softmax
