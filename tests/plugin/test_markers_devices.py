"""Marker validation before the test runs, requires_cuda, and the torch_device parametrization."""

from __future__ import annotations

import glob

import pytest

BAD_MARKERS = """
import pytest


def ran(name):
    open(f"ran-{name}", "w").close()


@pytest.mark.nan_guard(detect=True)
def test_unknown_keyword():
    ran("unknown_keyword")


@pytest.mark.nan_guard(detect_anomaly="yes")
def test_wrong_type():
    ran("wrong_type")


@pytest.mark.requires_cuda(min_devices=0)
def test_zero_devices():
    ran("zero_devices")


@pytest.mark.requires_cuda(1, 2)
def test_too_many_positional():
    ran("too_many_positional")


@pytest.mark.torchcheck_seed
def test_seed_missing():
    ran("seed_missing")


@pytest.mark.torchcheck_seed(True)
def test_seed_bool():
    ran("seed_bool")


@pytest.mark.torchcheck_seed(seed=2**32)
def test_seed_range():
    ran("seed_range")
"""


def test_bad_marker_arguments_error_at_setup_and_the_body_never_runs(pytester, inner):
    pytester.makepyfile(test_bad_markers=BAD_MARKERS)
    result = inner.run()
    names = ["test_unknown_keyword", "test_wrong_type", "test_zero_devices", "test_too_many_positional",
             "test_seed_missing", "test_seed_bool", "test_seed_range"]
    assert inner.outcomes(result) == {name: "ERROR" for name in names}
    where = "@pytest.mark.{} on test_bad_markers.py::{}: "
    for name, marker, message in [
        ("test_unknown_keyword", "nan_guard", "unknown keyword 'detect'; valid keywords: detect_anomaly, backward"),
        ("test_wrong_type", "nan_guard", "detect_anomaly='yes' must be bool"),
        ("test_zero_devices", "requires_cuda", "min_devices must be >= 1, got 0"),
        ("test_too_many_positional", "requires_cuda",
         "takes at most 1 positional argument(s), got 2; signature: requires_cuda(min_devices=1)"),
        ("test_seed_missing", "torchcheck_seed", "missing required argument 'seed'; signature: torchcheck_seed(seed)"),
        ("test_seed_bool", "torchcheck_seed", "seed=True must be int"),
        ("test_seed_range", "torchcheck_seed", "seed must be in 0..4294967295, got 4294967296"),
    ]:
        text = where.format(marker, name) + message
        # The message alone, once, right under the error header: no traceback, no chained repeat.
        result.stdout.fnmatch_lines([f"*_ ERROR at setup of {name} _*", glob.escape(text)], consecutive=True)
        assert not (pytester.path / f"ran-{name[5:]}").exists()
    out = result.stdout.str()
    assert "During handling of the above exception" not in out
    assert "Traceback" not in out
    assert "- torchcheck -" not in out  # a usage error is not a check failure: no seed/rerun section


REQUIRES_CUDA = """
import pytest


@pytest.mark.requires_cuda
def test_one_gpu():
    open("ran-one", "w").close()


@pytest.mark.requires_cuda(2)
def test_two_gpus():
    open("ran-two", "w").close()


@pytest.mark.requires_cuda(min_devices=3)
def test_three_gpus():
    open("ran-three", "w").close()
"""


def test_requires_cuda_skips_with_reason_when_too_few_devices(pytester, inner):
    pytester.makepyfile(test_cuda=REQUIRES_CUDA)
    result = inner.run("--torchcheck-devices=cpu")  # no CUDA device, whatever the machine has
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines([
        "SKIPPED * requires 1 CUDA device(s), found 0 (--torchcheck-devices; --torchcheck-devices overrides)",
        "SKIPPED * requires 2 CUDA device(s), found 0 *",
        "SKIPPED * requires 3 CUDA device(s), found 0 *",
    ])
    assert not list(pytester.path.glob("ran-*"))


def test_requires_cuda_counts_explicit_devices(pytester, inner):
    pytester.makepyfile(test_cuda=REQUIRES_CUDA)
    # Two explicit CUDA devices: the tests needing 1 or 2 run (they never touch CUDA), 3 is too many.
    result = inner.run("--torchcheck-devices=cpu,cuda:0,cuda:1")
    assert inner.outcomes(result) == {"test_one_gpu": "PASSED", "test_two_gpus": "PASSED"}
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * requires 3 CUDA device(s), found 2 *"])
    assert sorted(p.name for p in pytester.path.glob("ran-*")) == ["ran-one", "ran-two"]


TORCH_DEVICE = """
def test_device(torch_device):
    with open(f"device-{torch_device}", "w") as f:
        f.write(repr(torch_device))


def test_parent_has_not_initialised_cuda():
    import torch

    # Devices are probed in a subprocess: collecting test_device did not initialise CUDA here.
    assert not torch.cuda.is_initialized()
"""


@pytest.mark.parametrize(
    ("option", "ids"),
    [
        pytest.param("--torchcheck-devices=cpu", ["cpu"], id="cpu"),
        pytest.param("--torchcheck-devices=cpu,mps", ["cpu", "mps"], id="cpu-mps"),
        pytest.param("--torchcheck-devices= mps , cpu ", ["mps", "cpu"], id="spaces-and-order"),
    ],
)
def test_torch_device_is_parametrized_over_listed_devices(pytester, inner, option, ids):
    pytester.makepyfile(test_dev=TORCH_DEVICE)
    result = inner.run(option, "--collect-only", "-q")
    assert result.ret == 0
    collected = [line for line in result.outlines if line.startswith("test_dev.py::")]
    assert collected == [f"test_dev.py::test_device[{d}]" for d in ids] + [
        "test_dev.py::test_parent_has_not_initialised_cuda"]


def test_torch_device_detects_devices_in_a_subprocess(pytester, inner):
    pytester.makepyfile(test_dev=TORCH_DEVICE)
    result = inner.run()
    outcomes = inner.outcomes(result)
    assert outcomes["test_device[cpu]"] == "PASSED"  # cpu always; cuda/mps where present
    assert set(outcomes) <= {"test_device[cpu]", "test_device[cuda]", "test_device[mps]",
                             "test_parent_has_not_initialised_cuda"}
    assert set(outcomes.values()) == {"PASSED"}
    assert inner.read("device-cpu") == "device(type='cpu')"  # the fixture's value is a torch.device


@pytest.mark.parametrize(
    ("args", "env", "error"),
    [
        pytest.param(("--torchcheck-devices=gpu",), None,
                     "ERROR: --torchcheck-devices: invalid device list 'gpu'; "
                     "use a comma-separated list of cpu, cuda, cuda:N, mps", id="cli"),
        pytest.param((), "cpu,tpu",
                     "ERROR: environment variable TORCHCHECK_DEVICES: invalid device list 'cpu,tpu'; *", id="env"),
    ],
)
def test_bad_devices_value_is_usage_error(pytester, inner, monkeypatch, args, env, error):
    pytester.makepyfile(test_dev=TORCH_DEVICE)
    if env is not None:
        monkeypatch.setenv("TORCHCHECK_DEVICES", env)
    inner.assert_usage_error(inner.run(*args), error)
