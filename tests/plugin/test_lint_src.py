"""``--torchcheck-lint`` lints what pytest collects: adding ``src`` to the paths (or testpaths) lints it too."""

from __future__ import annotations

import pytest

TRAIN = """
import torch


def fit(model, loader, opt):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.zero_grad()
        opt.step()
"""


def test_src_is_linted_when_pytest_collects_it(pytester: pytest.Pytester, inner) -> None:
    (pytester.path / "src" / "pkg").mkdir(parents=True)
    (pytester.path / "src" / "pkg" / "train.py").write_text(TRAIN.lstrip())
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_x.py").write_text("def test_ok():\n    pass\n")
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')

    only_tests = inner.run("--torchcheck-lint")
    assert "src/pkg/train.py" not in only_tests.stdout.str()
    assert only_tests.ret == 0

    with_src = inner.run("--torchcheck-lint", "tests", "src")
    with_src.stdout.fnmatch_lines(["FAILED src/pkg/train.py::torchcheck-lint - src/pkg/train.py:8:9: TRN101 *"])

    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["tests", "src"]\n')
    from_ini = inner.run("--torchcheck-lint")
    from_ini.stdout.fnmatch_lines(["FAILED src/pkg/train.py::torchcheck-lint - src/pkg/train.py:8:9: TRN101 *"])
