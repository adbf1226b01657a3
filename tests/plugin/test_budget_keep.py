"""A failing cpu_memory budget names the line that kept a graph alive, not only the kernels that allocated."""

from __future__ import annotations

KEEP = '''
import pytest
import torch
from torch import nn


def setup():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
    return model, torch.randn(128, 64), torch.randn(128, 1)


@pytest.mark.budget(cpu_memory="256KiB")
def test_loss_kept_with_its_graph():
    model, x, y = setup()
    running_loss = 0.0
    for _ in range(50):
        loss = nn.functional.mse_loss(model(x), y)
        running_loss += loss
    return running_loss


@pytest.mark.budget(cpu_memory="256KiB")
def test_big_temporary_and_detached_loss():
    model, x, y = setup()
    running_loss = 0.0
    for _ in range(50):
        loss = nn.functional.mse_loss(model(x), y)
        running_loss += loss.detach()
    big = torch.ones(1 << 20)
    return running_loss, big.sum()
'''


def test_cpu_memory_names_the_line_that_kept_the_graph(inner):
    inner.pytester.makepyfile(test_keep=KEEP)
    result = inner.run()
    assert inner.outcomes(result) == {"test_loss_kept_with_its_graph": "FAILED",
                                      "test_big_temporary_and_detached_loss": "FAILED"}
    kept = inner.message(result, "test_loss_kept_with_its_graph")
    kept.fnmatch_lines([
        "*budget exceeded: cpu_memory * > limit 256.00 KiB in region 'test body' of "
        "test_keep.py::test_loss_kept_with_its_graph (device cpu)",
        "*largest allocations by an operator*",
        "    *KiB by aten.* at test_keep.py:*  loss = nn.functional.mse_loss(model(x), y)",
        "    kept with its graph: `running_loss += loss` at test_keep.py:18 holds * autograd nodes when the region "
        "returns (*); accumulate loss.detach() or loss.item() instead",
    ])
    assert len(kept.lines) <= 10
    # The near miss: a detached running loss keeps no graph; the failure is the temporary's alone.
    other = inner.message(result, "test_big_temporary_and_detached_loss")
    other.fnmatch_lines(["*4.00 MiB by aten.ones at test_keep.py:*  big = torch.ones(1 << 20)"])
    assert "kept with its graph" not in "\n".join(other.lines)
