"""The pytest11 entry point loads without importing torch."""

from __future__ import annotations

import glob
import subprocess
import sys
import textwrap

from importlib.metadata import entry_points


def test_entry_point_registered():
    eps = entry_points(group="pytest11")
    assert any(ep.name == "torchcheck" and ep.value == "pytest_torchcheck.plugin" for ep in eps)


def test_loading_plugin_does_not_import_torch(pytester):
    pytester.makepyfile(
        test_plain=textwrap.dedent(
            """
            import sys

            def test_torch_not_loaded():
                assert "torch" not in sys.modules
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "torchcheck", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["torchcheck: *"])


def test_plugin_import_alone_is_torch_free():
    code = "import sys, pytest_torchcheck.plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_seed_option_is_registered(pytester):
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--torchcheck-seed=N*"])


RECORD_MODULES = """
import atexit
import sys


def _record(stage):
    with open("modules.txt", "a") as f:
        f.write(f"{stage}: plugin={'pytest_torchcheck.plugin' in sys.modules} torch={'torch' in sys.modules}\\n")


atexit.register(_record, "exit")


def pytest_collection_finish(session):
    _record("collected")
"""


def test_version_loads_plugin_without_torch(pytester):
    pytester.makeconftest(RECORD_MODULES)
    # A single --version stops before plugins load; --version --version loads them all and lists them.
    result = pytester.runpytest_subprocess("--version", "--version")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*pytest-torchcheck-*pytest_torchcheck*plugin.py"])
    assert (pytester.path / "modules.txt").read_text() == "exit: plugin=True torch=False\n"


def test_collecting_and_running_non_torch_tests_leaves_torch_unimported(pytester):
    pytester.makeconftest(RECORD_MODULES)
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "modules.txt").read_text() == (
        "collected: plugin=True torch=False\n"
        "exit: plugin=True torch=False\n"
    )


def test_markers_are_documented_with_signatures(inner):
    result = inner.run("--markers")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "@pytest.mark.nan_guard(detect_anomaly=False, backward=True): fail at the first module *NaN/Inf*",
        "@pytest.mark.requires_cuda(min_devices=1): skip unless at least min_devices CUDA devices *",
        "@pytest.mark.torchcheck_seed(seed): base seed for this test, overriding --torchcheck-seed",
    ])
    # The sub-plugins register their own markers through pytest_torchcheck.core, each once.
    for line in ("@pytest.mark.distributed(world_size=2, backend='gloo', timeout=60, isolate=False): run the test *",
                 "@pytest.mark.budget(*, cpu_memory=, *warmup=0, repeats=5, tolerance=, name=): fail the test when *",
                 "@pytest.mark.torchcheck_lint: a torchcheck static-lint item (--torchcheck-lint)",
                 "@pytest.mark.torchcheck_watch(enabled=True, *, select=None, ignore=None): run the test's body *"):
        result.stdout.fnmatch_lines([line])
    for name in ("nan_guard", "requires_cuda", "torchcheck_seed", "distributed", "budget", "torchcheck_lint",
                 "torchcheck_watch"):
        assert sum(line.startswith(f"@pytest.mark.{name}(") or line.startswith(f"@pytest.mark.{name}:")
                   for line in result.outlines) == 1, name


def test_help_lists_every_option_with_its_env_and_ini_twin(inner):
    result = inner.run("--help")  # inner sets a wide terminal: one line per option
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "torchcheck: checks for PyTorch training code:",
        "  --torchcheck-seed=N *base seed: each test is seeded from it and its test id*"
        + glob.escape("[env TORCHCHECK_SEED, ini torchcheck_seed]"),
        "  --torchcheck-devices=LIST",
        "*devices torch_device runs on*" + glob.escape("[env TORCHCHECK_DEVICES, ini torchcheck_devices]"),
        "  --torchcheck-nan-guard",
        "*guard every test with nan_guard*" + glob.escape("[env TORCHCHECK_NAN_GUARD, ini torchcheck_nan_guard]"),
        "  --torchcheck-watch *watch every test's body with torchcheck run's runtime checks*"
        + glob.escape("[env TORCHCHECK_WATCH, ini torchcheck_watch]"),
    ])
    result.stdout.fnmatch_lines([
        "  torchcheck_seed (string):",
        "*base seed: each test is seeded from it*",
        "  torchcheck_devices (string):",
        "*devices torch_device runs on*",
        "  torchcheck_nan_guard (string):",
        "*guard every test with nan_guard*",
    ], consecutive=True)


def test_the_plugin_extra_brings_no_other_pytest_plugin():
    """Every pytest run loads every installed pytest11 plugin: one that comes with the ``plugin`` extra costs
    every suite, torch or not. Hypothesis's does (it imports Hypothesis at the end of each run, about 0.6 s):
    Hypothesis belongs to the ``strategies`` extra, not to this one."""
    import re
    import tomllib
    from importlib.metadata import PackageNotFoundError, distribution
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    names = [re.match(r"[A-Za-z0-9_.-]+", req).group(0) for req in extras["plugin"]]
    assert "hypothesis" not in names
    assert any(req.startswith("hypothesis") for req in extras["strategies"])
    plugins = {}
    for name in names:
        try:
            dist = distribution(name)
        except PackageNotFoundError:  # pragma: no cover - the test environment installs the plugin extra
            raise AssertionError(f"{name}, a requirement of the plugin extra, is not installed") from None
        found = [ep.name for ep in dist.entry_points if ep.group == "pytest11"]
        if found:
            plugins[name] = found
    assert plugins == {}
