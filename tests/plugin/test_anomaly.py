"""nan_guard: marker, fixture and context manager name the module that made a NaN/Inf."""

from __future__ import annotations

GUARDED = """
import pytest
import torch
from torch import nn

import pytest_torchcheck


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


class Sqrt(nn.Module):
    def forward(self, x):
        return torch.sqrt(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Identity(), Log(), nn.Linear(3, 2))
        self.head = nn.Linear(2, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


def bad_input():
    return torch.arange(-2.0, 4.0).reshape(2, 3)  # log: 2 NaN (log -2, log -1), 1 Inf (log 0)


class RootNet(nn.Module):
    # Forward is finite (sqrt(0) = 0); the backward of sqrt at 0 is infinite.
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.root = Sqrt()
        self.out = nn.Linear(4, 1)
        with torch.no_grad():
            self.proj.weight.zero_()
            self.proj.bias.zero_()
            self.out.weight.fill_(0.5)

    def forward(self, x):
        return self.out(self.root(self.proj(x)))


def inplace_model(zero_first):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True), Sqrt(), nn.Linear(4, 1))
    with torch.no_grad():
        model[3].weight.fill_(0.5)
        if zero_first:
            model[0].weight.zero_()
            model[0].bias.zero_()
        else:
            model[0].bias.fill_(10.0)  # sqrt of a positive value everywhere
    return model


@pytest.mark.nan_guard
def test_marker_forward_log_of_zero():
    Net()(bad_input())


def test_fixture_backward_sqrt_at_zero(nan_guard):
    model = RootNet()
    nan_guard.watch(model)
    out = model(torch.ones(3, 4))
    assert torch.isfinite(out).all()
    out.sum().backward()


@pytest.mark.nan_guard
def test_inplace_relu_backward_culprit():
    inplace_model(zero_first=True)(torch.ones(3, 4)).sum().backward()


@pytest.mark.nan_guard
def test_inplace_relu_finite_passes():
    model = inplace_model(zero_first=False)
    model(torch.randn(3, 4)).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.nan_guard
def test_finite_model_passes():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    model(torch.randn(5, 4)).pow(2).mean().backward()


@pytest.mark.nan_guard
def test_swallowed_by_test_still_fails():
    try:
        Net()(bad_input())
    except Exception:
        open("swallowed", "w").close()


@pytest.mark.nan_guard(detect_anomaly=True)
def test_detect_anomaly_is_on_and_guard_names_module():
    assert torch.is_anomaly_enabled()
    RootNet()(torch.ones(3, 4)).sum().backward()


def test_anomaly_mode_is_off_again_after_the_guarded_test():
    assert not torch.is_anomaly_enabled()


@pytest.mark.nan_guard(backward=False)
def test_backward_false_ignores_gradients():
    model = RootNet()
    model(torch.ones(3, 4)).sum().backward()
    assert torch.isinf(model.proj.bias.grad).all()


def test_context_manager():
    with pytest_torchcheck.nan_guard():
        Net()(bad_input())


def test_context_manager_swallowed():
    with pytest_torchcheck.nan_guard() as guard:
        try:
            RootNet()(torch.ones(3, 4)).sum().backward()
        except Exception:
            open("swallowed-cm", "w").close()
        assert guard.failure is not None


def test_unguarded_test_is_untouched():
    assert torch.isnan(Net()(bad_input())).any()


def test_guard_hooks_are_removed_after_the_test():
    from torch.nn.modules import module

    assert not module._global_forward_hooks and not module._global_forward_pre_hooks
"""

FORWARD = [
    "*TorchcheckFailure: nan_guard: forward output of module 'Net.encoder.1' (Log) is not finite",
    "  output: shape (2, 3), 2 NaN, 1 Inf of 6 elements",
    "  inputs:",
    "    input[[]0]: shape (2, 3), min -2, max 3",
    "  likely cause: Log.forward produced them from finite inputs *",
]


def _backward(name: str) -> list[str]:
    return [
        f"*TorchcheckFailure: nan_guard: gradient w.r.t. the input[[]0] of module '{name}' (Sqrt) is not finite during backward",
        "  gradient: shape (3, 4), 0 NaN, 12 Inf of 12 elements",
        f"  likely cause: the backward of '{name}' turned a finite output gradient into a non-finite input gradient*",
    ]


def test_nan_guard_names_the_module_shape_counts_and_input_range(pytester, inner):
    pytester.makepyfile(test_guarded=GUARDED)
    result = inner.run()
    failed = ["test_marker_forward_log_of_zero", "test_fixture_backward_sqrt_at_zero",
              "test_inplace_relu_backward_culprit", "test_swallowed_by_test_still_fails",
              "test_detect_anomaly_is_on_and_guard_names_module", "test_context_manager",
              "test_context_manager_swallowed"]
    passed = ["test_inplace_relu_finite_passes", "test_finite_model_passes",
              "test_anomaly_mode_is_off_again_after_the_guarded_test", "test_backward_false_ignores_gradients",
              "test_unguarded_test_is_untouched", "test_guard_hooks_are_removed_after_the_test"]
    assert inner.outcomes(result) == {**dict.fromkeys(failed, "FAILED"), **dict.fromkeys(passed, "PASSED")}

    for test in ("test_marker_forward_log_of_zero", "test_swallowed_by_test_still_fails", "test_context_manager"):
        inner.message(result, test).fnmatch_lines(FORWARD, consecutive=True)
    # Backward-only NaN: named after the module whose backward produced it (named from the watched
    # root by the fixture, from the outermost module called otherwise), also with in-place ReLU.
    for test, name in [("test_fixture_backward_sqrt_at_zero", "RootNet.root"),
                       ("test_inplace_relu_backward_culprit", "Sequential.2"),
                       ("test_detect_anomaly_is_on_and_guard_names_module", "RootNet.root"),
                       ("test_context_manager_swallowed", "RootNet.root")]:
        inner.message(result, test).fnmatch_lines(_backward(name), consecutive=True)
    # The test's own except caught the failure, and the guard still failed the test.
    assert (pytester.path / "swallowed").exists()
    assert (pytester.path / "swallowed-cm").exists()
    result.stdout.fnmatch_lines(["*- torchcheck -*", "seed: * test id test_guarded.py::test_context_manager)"])


TORCH_FREE = '''
import sys


def test_a():
    assert "torch" not in sys.modules


def test_b():
    assert "torch" not in sys.modules
'''

TORCH_USER = '''
import torch


def test_nan():
    torch.nn.Linear(2, 2)(torch.full((1, 2), float("nan")))
'''


def test_nan_guard_option_imports_no_torch_into_a_suite_that_never_does(pytester, inner):
    pytester.makepyfile(test_torch_free=TORCH_FREE)
    result = inner.run("--torchcheck-nan-guard")
    assert inner.outcomes(result) == {"test_a": "PASSED", "test_b": "PASSED"}, result.stdout.str()
    # ... and still guards the tests of a suite that imports torch.
    pytester.makepyfile(test_torch_user=TORCH_USER)
    result = inner.run("--torchcheck-nan-guard", "test_torch_user.py")
    assert inner.outcomes(result) == {"test_nan": "FAILED"}
    inner.message(result, "test_nan").fnmatch_lines(["*nan_guard: forward output of module * is not finite*"])
