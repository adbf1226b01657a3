"""The watch itself (pytest_torchcheck/watch/watcher.py, events.py), in process: torch is patched only
inside the block and restored exactly after, a check that raises never breaks the program, and the
findings point at the caller's line."""

from __future__ import annotations

import pytest
import torch

from pytest_torchcheck.watch.check import Check
from pytest_torchcheck.watch.watcher import StepLimitReached, Watcher


def _entry_points() -> dict[str, object]:
    import torch.optim.optimizer as optim_module

    return {
        "Optimizer.__init__": vars(torch.optim.Optimizer)["__init__"],
        "Optimizer.zero_grad": vars(torch.optim.Optimizer)["zero_grad"],
        "Module.zero_grad": vars(torch.nn.Module)["zero_grad"],
        "autograd.backward": torch.autograd.backward,
        "cuda.empty_cache": torch.cuda.empty_cache,
        "cuda.memory.empty_cache": torch.cuda.memory.empty_cache,
        "step pre hooks": dict(optim_module._global_optimizer_pre_hooks),
        "step post hooks": dict(optim_module._global_optimizer_post_hooks),
    }


def _train(steps: int, clear_after_backward: bool = False) -> None:
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        if not clear_after_backward:
            opt.zero_grad()
        model(torch.ones(2, 3)).sum().backward()
        if clear_after_backward:
            opt.zero_grad()
        opt.step()


def test_torch_is_patched_only_inside_the_block_and_restored_exactly() -> None:
    before = _entry_points()
    with Watcher() as watcher:
        inside = _entry_points()
        _train(2)
    assert _entry_points() == before
    assert all(inside[k] is not before[k] for k in ("Optimizer.__init__", "Optimizer.zero_grad",
                                                     "Module.zero_grad", "autograd.backward", "cuda.empty_cache"))
    assert len(inside["step pre hooks"]) == len(before["step pre hooks"]) + 1
    assert watcher.events.steps == 2 and watcher.events.backwards == 2


def test_torch_is_restored_when_the_program_raises() -> None:
    before = _entry_points()
    with pytest.raises(ValueError), Watcher():
        raise ValueError("the program failed")
    assert _entry_points() == before


class _Broken(Check):
    CODE = "TRN999"

    def on_step_pre(self, optimizer: object) -> None:
        raise RuntimeError("a bug in a check")


def test_a_check_that_raises_is_skipped_and_the_program_goes_on() -> None:
    watcher = Watcher([])
    watcher.checks.append(_Broken())
    with watcher:
        _train(3)
    assert watcher.events.steps == 3
    assert watcher.errors == ["TRN999: RuntimeError: a bug in a check"] * 3


def test_findings_point_at_the_callers_line() -> None:
    with Watcher(["TRN101"]) as watcher:
        _train(2, clear_after_backward=True)
    [finding] = watcher.findings
    line = _train.__code__.co_firstlineno + 8  # the opt.zero_grad() after backward
    assert (finding.code, finding.line, finding.column) == ("TRN101", line, 13)
    assert finding.path.endswith("test_watch_watcher.py")


def test_max_steps_stops_after_that_many_steps() -> None:
    with pytest.raises(StepLimitReached) as stopped, Watcher([], max_steps=2) as watcher:
        _train(5)
    assert (stopped.value.code, watcher.events.steps, watcher.stopped) == (0, 2, True)
    assert isinstance(stopped.value, SystemExit)  # an `except Exception` in the program lets it through


def test_selecting_codes_picks_their_checks_only() -> None:
    assert [c.CODE for c in Watcher(["TRN202", "TRN101", "TRN5"]).checks] == ["TRN101", "TRN202"]
