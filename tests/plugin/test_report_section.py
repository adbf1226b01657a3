"""The "torchcheck" report section and its paste-ready rerun command."""

from __future__ import annotations

import glob
import re
import shlex
from importlib.metadata import version

import pytest

from pytest_torchcheck.seeding import derive_seed

SEEDED_FAILURES = """
import pytest
import torch

from pytest_torchcheck import assert_finite


def test_log_of_noise():
    # Which elements are negative (NaN after log) depends on the seed, and so does the message.
    print("noise:", torch.rand(4).tolist())
    assert_finite(torch.randn(64).log(), name="log_noise")


@pytest.mark.torchcheck_seed(77)
def test_marked_seed(torch_seed):
    assert torch_seed < 0, "plain assert in a torchcheck test"


def test_plain_failure():
    assert torch.zeros(1).item() == 1.0, "not a torchcheck test"
"""


def _rerun_args(result: pytest.RunResult, nodeid: str, cwd: str) -> list[str]:
    """The rerun command printed for ``nodeid``, split into the arguments after ``python -m pytest``."""
    lines = [line for line in result.outlines if line.startswith("rerun: ") and f" {nodeid} " in line]
    assert len(lines) == 1, result.stdout.str()
    cd, command = lines[0][len("rerun: "):].split(" && ", 1)
    assert shlex.split(cd) == ["cd", cwd]
    args = shlex.split(command)
    assert args[:3] == ["python", "-m", "pytest"]
    return args[3:]


def _failure_lines(result: pytest.RunResult, *patterns: str) -> list[str]:
    return [line for line in result.outlines if any(re.match(p, line) for p in patterns)]


def test_section_has_seed_torch_device_and_rerun_that_reproduces_the_failure(pytester, inner):
    pytester.makepyfile(test_noise=SEEDED_FAILURES)
    result = inner.run("--torchcheck-seed=1234")
    assert inner.outcomes(result) == {"test_log_of_noise": "FAILED", "test_marked_seed": "FAILED",
                                      "test_plain_failure": "FAILED"}
    nodeid = "test_noise.py::test_log_of_noise"
    rerun = f"rerun: cd {shlex.quote(str(pytester.path))} && python -m pytest {nodeid} --torchcheck-seed=1234"
    result.stdout.fnmatch_lines([
        "*_ test_log_of_noise _*",
        "E   *TorchcheckFailure: assert_finite: 1 of 1 tensors hold non-finite values",
        "E     log_noise: shape (64,), * NaN, 0 Inf of 64 elements; first at index *",
        "*- torchcheck -*",
        f"seed: {derive_seed(1234, nodeid)} (base seed 1234, test id {nodeid})",
        f"torch: {version('torch')}",
        "device: cpu",
        "world size: 1",
        glob.escape(rerun),
    ])
    # A torchcheck marker or fixture gets the section for a plain assert too; its seed is the marker's.
    marked = "test_noise.py::test_marked_seed"
    result.stdout.fnmatch_lines([
        "*_ test_marked_seed _*",
        "*plain assert in a torchcheck test*",
        "*- torchcheck -*",
        f"seed: {derive_seed(77, marked)} (base seed 77, test id {marked})",
        f"rerun: cd * && python -m pytest {marked} --torchcheck-seed=77",
    ])
    # A failure that involves no torchcheck check gets no section.
    assert len(re.findall(r"-+ torchcheck -+", result.stdout.str())) == 2
    plain = result.stdout.str().split("_ test_plain_failure _", 1)[1]
    assert "not a torchcheck test" in plain and "rerun:" not in plain

    patterns = (r"E     log_noise: shape", r"noise: \[")
    original = _failure_lines(result, *patterns)
    assert len(original) == 2, result.stdout.str()
    again = inner.run(*_rerun_args(result, nodeid, str(pytester.path)))
    assert inner.outcomes(again) == {"test_log_of_noise": "FAILED"}
    assert _failure_lines(again, *patterns) == original  # same NaN count, same first index, same noise
    again.stdout.fnmatch_lines([glob.escape(rerun)])


GUARDLESS = """
import torch
from torch import nn


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 3), Log())

    def forward(self, x):
        return self.body(x)


def test_unguarded_model():
    out = Net()(torch.randn(4, 3))
    assert torch.isnan(out).any()  # log of negative values: nothing stops it without a guard
"""


def test_nan_guard_option_guards_unmarked_tests_and_rerun_keeps_it(pytester, inner):
    pytester.makepyfile(test_guardless=GUARDLESS)
    guarded = inner.run("--torchcheck-nan-guard")  # without a guard, the test passes: it expects the NaN
    assert inner.outcomes(guarded) == {"test_unguarded_model": "FAILED"}
    message = "nan_guard: forward output of module 'Net.body.1' (Log) is not finite"
    guarded.stdout.fnmatch_lines([f"FAILED test_guardless.py::test_unguarded_model - *{message}"])
    args = _rerun_args(guarded, "test_guardless.py::test_unguarded_model", str(pytester.path))
    assert "--torchcheck-nan-guard" in args  # without it the rerun would pass
    again = inner.run(*args)
    assert inner.outcomes(again) == {"test_unguarded_model": "FAILED"}
    again.stdout.fnmatch_lines([f"FAILED test_guardless.py::test_unguarded_model - *{message}"])
    assert inner.message(again, "test_unguarded_model").lines == inner.message(guarded, "test_unguarded_model").lines
