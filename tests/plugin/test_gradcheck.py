"""assert_gradcheck: float64 promotion, the worst Jacobian entry named, modules with parameters, gradgrad."""

from __future__ import annotations

import pytest

GRADCHECKS = """
import torch
from torch import nn

from pytest_torchcheck import assert_gradcheck


class HalfSquare(torch.autograd.Function):
    # d(x*x)/dx is 2x; this backward returns x: every gradient is half the true one.
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


class HalfWeightGrad(torch.autograd.Function):
    # Correct w.r.t. x, half the true gradient w.r.t. w.
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad * w, 0.5 * (grad * x).sum(0)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3))

    def forward(self, x):
        return HalfWeightGrad.apply(x, self.weight)


class DetachedSquare(torch.autograd.Function):
    # First derivative right; its backward detaches x, so the second derivative is 0 instead of 2.
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x.detach()


def test_sin_float32_passes():
    assert_gradcheck(torch.sin, torch.randn(4, 3, dtype=torch.float32))


def test_wrong_backward():
    assert_gradcheck(HalfSquare.apply, torch.rand(3, 2) + 1.0)


def test_module_parameter():
    assert_gradcheck(Scale(), torch.rand(2, 3) + 1.0)


def test_module_without_params_checked_passes():
    assert_gradcheck(Scale(), torch.rand(2, 3) + 1.0, check_params=False)


def test_float32_module_passes():
    assert_gradcheck(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)), torch.randn(5, 3))


def test_first_order_of_detached_square_passes():
    assert_gradcheck(DetachedSquare.apply, torch.randn(3))


def test_gradgrad():
    assert_gradcheck(DetachedSquare.apply, torch.randn(3), gradgrad=True)


def test_fast_mode_only():
    assert_gradcheck(HalfSquare.apply, torch.rand(3, 2) + 1.0, mode="fast")
"""


def test_assert_gradcheck_names_the_worst_entry(pytester, inner):
    pytester.makepyfile(test_grads=GRADCHECKS)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_sin_float32_passes": "PASSED",  # promoted to float64: finite differences are exact enough
        "test_wrong_backward": "FAILED",
        "test_module_parameter": "FAILED",
        "test_module_without_params_checked_passes": "PASSED",
        "test_float32_module_passes": "PASSED",
        "test_first_order_of_detached_square_passes": "PASSED",
        "test_gradgrad": "FAILED",
        "test_fast_mode_only": "FAILED",
    }
    wrong = inner.message(result, "test_wrong_backward")
    wrong.fnmatch_lines([
        "*TorchcheckFailure: assert_gradcheck: gradients of HalfSquare.apply are wrong",
        "  worst entry: d output 0[[]*, *] / d input 0[[]*, *]",
        "    analytic  = *",
        "    numerical = * (analytic/numerical = 0.5)",
        "    abs error = *, rel error = 0.5; allowed = atol 1e-05 + rtol 0.001 * |numerical| = *",
        "  6 of 36 Jacobian entries (over all checked inputs and parameters) are out of tolerance; "
        "output shapes [[](3, 2)], input 0 shape (3, 2)",
        "  checked in float64 with eps=1e-06; outputs have 6 elements",
        "  mode: full check (every Jacobian entry, as torch's slow mode)",
    ], consecutive=True)
    analytic, numerical = (float(line.split("=")[1].split()[0]) for line in wrong.lines[2:4])
    assert analytic == pytest.approx(numerical / 2, rel=1e-6)

    param = inner.message(result, "test_module_parameter")
    param.fnmatch_lines([
        "*TorchcheckFailure: assert_gradcheck: gradients of Scale are wrong",
        "  worst entry: d output 0[[]*, *] / d parameter 'weight'[[]*]",
        "    analytic  = *",
        "    numerical = * (analytic/numerical = 0.5)",
    ], consecutive=True)
    param.fnmatch_lines(["*parameter 'weight' shape (3,)"])

    gradgrad = inner.message(result, "test_gradgrad")
    gradgrad.fnmatch_lines([
        "*TorchcheckFailure: assert_gradcheck: second-order gradients of DetachedSquare.apply are wrong "
        "(gradgradcheck): Jacobian mismatch*",
        "  tolerance: atol=1e-05, rtol=0.001, eps=1e-06; full check",
    ], consecutive=True)
    fast = inner.message(result, "test_fast_mode_only")
    fast.fnmatch_lines(["*gradients of HalfSquare.apply are wrong", "  worst entry: *"], consecutive=True)
    assert fast.lines[-1] == "  mode: fast mode only (mode='fast': one random projection)"
    # A worst entry, never a Jacobian: torch's own message prints every entry of both matrices.
    for message in (wrong, param, gradgrad, fast):
        assert len(message.lines) < 15
        assert not any("tensor(" in line for line in message.lines)
