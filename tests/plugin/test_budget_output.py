"""A budget marker's failure ends at the user's test: no plugin wrapper, no model or batch printed."""

from __future__ import annotations

import re

OUTPUT = '''
import pytest
import torch
from torch import nn


@pytest.fixture
def model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


@pytest.fixture
def batch():
    return torch.randn(64, 8)


@pytest.mark.budget(syncs=0)
def test_step(model, batch):
    loss = model(batch).sum()
    loss.backward()
    print(loss.item())


@pytest.mark.budget(syncs=0)
def test_body_fails(model, batch):
    out = model(batch)
    assert out.shape == (64, 2), "wrong width"
'''


def _section(lines: list[str], test: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if re.match(rf"^_+ {test} _+$", line))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^(_{3,} \w|-+ (Captured|torchcheck)|=+ )", lines[i])),
               len(lines))
    return lines[start + 1:end]


def test_marker_failure_ends_at_the_test(inner):
    inner.pytester.makepyfile(test_output=OUTPUT)
    for style in ("long", "short"):
        result = inner.run(f"--tb={style}")
        assert inner.outcomes(result) == {"test_step": "FAILED", "test_body_fails": "FAILED"}
        step = _section(result.outlines, "test_step")
        text = "\n".join(step)
        for leak in ("budgeted_test", "kwargs", "tensor(", "Linear(", "pytest_torchcheck/", "run_function", "^^^"):
            assert leak not in text, (style, leak, text)
        assert len(step) <= 10, text
        pytest_line = [line for line in step if "def test_step(model, batch):" in line]
        assert len(pytest_line) == 1, text
        assert any(re.match(r"^E   .*TorchcheckFailure: budget exceeded: syncs 1 > limit 0", line) for line in step)
        assert any(re.search(r"1x \.item\(\) at test_output\.py:\d+  print\(loss\.item\(\)\)", line)
                   for line in step)
        assert re.search(r"test_output\.py:\d+: (TorchcheckFailure|in test_step)", text)

        # A failure of the body itself keeps its own traceback, at its own line.
        body = "\n".join(_section(result.outlines, "test_body_fails"))
        assert 'assert out.shape == (64, 2), "wrong width"' in body
        assert "AssertionError: wrong width" in body
        assert "budget exceeded" not in body
