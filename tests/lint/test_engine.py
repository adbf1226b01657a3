"""The engine's work on one file grows with the file, not with its square (issue #24)."""

from __future__ import annotations

import sys

from lint_rules.api import Settings, lint_text
from tests.lint.training_files import training_file


def _python_calls(source: str) -> int:
    """Python function calls made by linting ``source`` with every rule (a count, not a time)."""
    settings = Settings.resolve(isolated=True, select=["ALL"], preview=True)
    lint_text(training_file(1), "train.py", settings)  # imports and registry outside the count
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        result = lint_text(source, "train.py", settings)
    finally:
        sys.setprofile(None)
    assert result.error is None and result.findings
    return calls


def test_lint_work_grows_linearly_with_the_training_functions_of_a_file() -> None:
    # A rule or analysis that scans the whole file once per loop, function or finding makes this
    # ratio climb towards 4 (it was 2.5 at this size, 2.9 at 70 -> 140 functions, before indexing).
    small = _python_calls(training_file(50))
    large = _python_calls(training_file(100))
    assert large / small < 2.1, (small, large)


_ZERO_GRAD_MISSING = """\
import torch
def fit(model, loader, optimizer):
    for x, y in loader:
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
"""


def test_nothing_is_certain_in_test_code(tmp_path) -> None:
    # the same missing zero_grad() is certain in the project's code and only possible in its tests
    import subprocess

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fit.py").write_text(_ZERO_GRAD_MISSING)
    (tmp_path / "fit.py").write_text(_ZERO_GRAD_MISSING)

    def codes(*flags: str) -> list[str]:
        out = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache",
                              "--select", "TRN1", "--format", "concise", *flags, "."],
                             cwd=tmp_path, capture_output=True, text=True)
        return sorted(line.split(":")[0] for line in out.stdout.splitlines() if "TRN102" in line)

    assert codes() == ["fit.py"]
    assert codes("--preview") == ["fit.py", "tests/test_fit.py"]
