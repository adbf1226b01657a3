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


class _Intercepts(Check):
    """Records the user's ``.item()`` calls (direct) and every softmax (not direct), and forward calls."""

    CODE = "TRN998"

    def __init__(self) -> None:
        super().__init__()
        self.items: list[float] = []
        self.softmaxes = 0
        self.forwards: list[str] = []

    def install(self, events) -> None:
        super().install(events)
        events.intercept("torch.Tensor.item", post=self._item, direct=True)
        events.intercept("torch.nn.functional.softmax", pre=self._softmax)

    def _item(self, args, kwargs, result) -> None:
        self.items.append(result)

    def _softmax(self, args, kwargs) -> None:
        self.softmaxes += 1
        torch.nn.functional.softmax(torch.ones(2), dim=0)  # a check's own calls are not events

    def on_forward_post(self, module, args, output) -> None:
        self.forwards.append(type(module).__name__)


def test_intercepted_calls_and_forward_hooks_reach_the_check_and_are_restored() -> None:
    import torch.nn.modules.module as module_module

    item, softmax = vars(torch._C.TensorBase)["item"], torch.nn.functional.softmax
    hooks = dict(module_module._global_forward_hooks)
    check = _Intercepts()
    watcher = Watcher([])
    watcher.checks.append(check)
    with watcher:
        assert torch.Tensor.item is not item and torch.nn.functional.softmax is not softmax
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Softmax(dim=1))
        out = model(torch.ones(1, 2))
        value = torch.tensor(3.0).item()
        torch.nn.functional.softmax(out, dim=1)
        # Adam's step reads its step counter inside torch: not a direct call
        opt = torch.optim.Adam(model.parameters())
        out.sum().backward()
        opt.step()
    assert value == 3.0 and check.items == [3.0]
    assert check.softmaxes == 2  # nn.Softmax's own call (inside torch) and the user's
    assert check.forwards == ["Linear", "Softmax", "Sequential"]
    assert "item" not in vars(torch.Tensor) and torch.nn.functional.softmax is softmax
    assert dict(module_module._global_forward_hooks) == hooks
    assert watcher.errors == []


def test_forward_hooks_are_registered_only_when_a_check_needs_them() -> None:
    import torch.nn.modules.module as module_module

    hooks = len(module_module._global_forward_hooks) + len(module_module._global_forward_pre_hooks)
    with Watcher(["TRN101", "TRN102"]):
        assert len(module_module._global_forward_hooks) + len(module_module._global_forward_pre_hooks) == hooks


def test_an_interception_of_a_missing_name_is_an_error_naming_it() -> None:
    check = _Intercepts()
    watcher = Watcher([])
    watcher.checks.append(check)
    check.install = lambda events: events.intercept("torch.nn.functional.no_such_loss", pre=print)
    with pytest.raises(AttributeError, match="no_such_loss"):
        with watcher:
            pass
