"""assert_gradcheck is never weaker than torch's default gradcheck: wrong backwards of five shapes, many seeds.

In-process on purpose: hundreds of checks in pytester subprocesses would cost minutes, and nothing here
touches pytest's reporting (test_gradcheck.py checks the messages through pytester).
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

from pytest_torchcheck import gradcheck as G
from pytest_torchcheck.errors import TorchcheckFailure

BETA = 1.5


class SwishForgetsBeta(torch.autograd.Function):
    """x * sigmoid(BETA x) whose backward uses sigmoid(x): the error's size and sign vary by entry."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * torch.sigmoid(BETA * x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * (s + BETA * x * s * (1 - s))


class Swish(torch.autograd.Function):
    """The correct twin of SwishForgetsBeta."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * torch.sigmoid(BETA * x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(BETA * x)
        return g * (s + BETA * x * s * (1 - s))


class TanhOnePercentHigh(torch.autograd.Function):
    """A uniform scale error: every gradient 1% too large."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return 1.01 * g * (1 - y * y)


class ExpWrongSign(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = torch.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return -g * y


class MatmulUntransposed(torch.autograd.Function):
    """x @ w whose input gradient uses w where w.T belongs (square w, so the shapes agree)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return g @ w, x.t() @ g


class Matmul(MatmulUntransposed):
    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return g @ w.t(), x.t() @ g


class BiasSummedOverFeatures(torch.autograd.Function):
    """x + b (b broadcast over rows) whose bias gradient sums over the feature axis instead of the batch axis."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return g, g.sum(1)


class Bias(BiasSummedOverFeatures):
    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return g, g.sum(0)


def square(n: int) -> Callable[[], tuple]:
    return lambda: (torch.randn(n, n),)


def pair(n: int) -> Callable[[], tuple]:
    return lambda: (torch.randn(n, n), torch.randn(n, n))


def with_bias(n: int) -> Callable[[], tuple]:
    return lambda: (torch.randn(n, n), torch.randn(n))


# name: (wrong backward, its correct twin, inputs)
BUGS = {
    "uniform-scale": (TanhOnePercentHigh.apply, torch.tanh, square(16)),
    "sign": (ExpWrongSign.apply, torch.exp, square(16)),
    "entry-dependent-scale": (SwishForgetsBeta.apply, Swish.apply, square(16)),
    "transpose": (MatmulUntransposed.apply, Matmul.apply, pair(8)),
    "broadcast": (BiasSummedOverFeatures.apply, Bias.apply, with_bias(8)),
}


def caught(fn: Callable, make: Callable[[], tuple], seeds: range, **kwargs: Any) -> int:
    n = 0
    for seed in seeds:
        torch.manual_seed(seed)
        try:
            G.assert_gradcheck(fn, *make(), **kwargs)
        except TorchcheckFailure:
            n += 1
    return n


@pytest.fixture
def projections_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Take the projection path at any size, and report the failing projection instead of the worst entry.

    Both only make the path cheap enough to run hundreds of times; the verdict is the projections' own.
    """
    monkeypatch.setattr(G, "FULL_CHECK_MAX_EVALUATIONS", 0)
    monkeypatch.setattr(G, "EXPLAIN_MAX_EVALUATIONS", 0)


@pytest.mark.parametrize("bug", list(BUGS))
def test_projections_catch_every_seed(bug: str, projections_only: None) -> None:
    wrong, _, make = BUGS[bug]
    assert caught(wrong, make, range(200)) == 200


@pytest.mark.parametrize("bug", list(BUGS))
def test_projections_pass_the_correct_twin(bug: str, projections_only: None) -> None:
    _, right, make = BUGS[bug]
    assert caught(right, make, range(200)) == 0


def test_fast_mode_alone_misses_an_entry_dependent_error(projections_only: None) -> None:
    # What mode="fast" gives up: torch's one projection lets this error cancel for some inputs.
    wrong, _, make = BUGS["entry-dependent-scale"]
    missed = 40 - caught(wrong, make, range(40), mode="fast")
    assert 5 <= missed <= 35
    # ... which the default (auto) mode never does on the same inputs.
    assert caught(wrong, make, range(40)) == 40


@pytest.mark.parametrize("bug", list(BUGS))
def test_full_check_catches_every_seed(bug: str) -> None:
    wrong, right, make = BUGS[bug]  # every input here is small enough for the full check
    assert caught(wrong, make, range(8)) == 8
    assert caught(right, make, range(3)) == 0


def test_auto_takes_the_full_check_when_affordable_and_reports_it() -> None:
    torch.manual_seed(0)
    with pytest.raises(TorchcheckFailure) as info:
        G.assert_gradcheck(SwishForgetsBeta.apply, torch.randn(16, 16))
    text = str(info.value)
    assert "worst entry: d output 0[" in text
    assert text.splitlines()[-1] == "  mode: full check (every Jacobian entry, as torch's slow mode)"


def test_auto_takes_projections_above_the_line_and_reports_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(G, "FULL_CHECK_MAX_EVALUATIONS", 100)
    monkeypatch.setattr(G, "EXPLAIN_MAX_EVALUATIONS", 100)
    torch.manual_seed(0)
    with pytest.raises(TorchcheckFailure) as info:
        G.assert_gradcheck(SwishForgetsBeta.apply, torch.randn(16, 16))
    lines = str(info.value).splitlines()
    assert lines[0].startswith("assert_gradcheck: gradients of SwishForgetsBeta.apply are wrong: random projection ")
    assert "v^T J u for output 0 / input 0: analytic " in lines[0]
    assert lines[1] == ("  checked in float64 with eps=1e-06, atol=1e-05, rtol=0.001; mode: fast mode + 16 random "
                        "projections (the full check would take 768 evaluations > 100; mode='full' forces it)")
    assert len(lines) == 2


def test_mode_full_forces_the_full_check_above_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(G, "FULL_CHECK_MAX_EVALUATIONS", 0)
    torch.manual_seed(0)
    with pytest.raises(TorchcheckFailure, match="worst entry") as info:
        G.assert_gradcheck(SwishForgetsBeta.apply, torch.randn(16, 16), mode="full")
    assert str(info.value).endswith("mode: full check (every Jacobian entry, as torch's slow mode)")


def test_a_rerun_with_the_same_seed_draws_the_same_projections(projections_only: None) -> None:
    messages = []
    for _ in range(2):
        torch.manual_seed(3)
        with pytest.raises(TorchcheckFailure) as info:
            G.assert_gradcheck(SwishForgetsBeta.apply, torch.randn(16, 16))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"mode": "slow"}, "mode='slow' is not one of 'auto', 'full', 'fast'"),
    ({"projections": 0}, "projections=0 must be an int of at least 1"),
])
def test_bad_mode_arguments_are_usage_errors(kwargs: dict, pattern: str) -> None:
    from pytest_torchcheck.errors import TorchcheckUsageError

    with pytest.raises(TorchcheckUsageError, match=pattern):
        G.assert_gradcheck(torch.tanh, torch.randn(3), **kwargs)
