"""The pytest11 entry point loads without importing torch."""

from __future__ import annotations

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
