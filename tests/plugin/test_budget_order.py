"""Every budget gives the same verdict whatever ran before it in the process: first, last, after a heavy one."""

from __future__ import annotations

import json


ORDERED = '''
import json

import torch
from torch import nn


def record(name, m):
    with open("results.jsonl", "a") as f:
        f.write(json.dumps([name, m.cpu_peak, m.syncs.total, sum(m.ops.values())]) + "\\n")


def many_small_ops():
    # 30,000 operators whose tensors die at once: about 1 KiB at most. Its memory events outnumber the
    # 65,536 bound objects pybind's table is grown for up front, so it also takes the measure-again path.
    x = torch.randn(8)
    for _ in range(30_000):
        x * 2


def epoch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 1)),
                                       batch_size=8, shuffle=True)

    def run():
        for x, y in data:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run


def test_heavy(budget):
    record("heavy", budget(many_small_ops, cpu_memory="64KiB", syncs=0, ops=100_000))


def test_epoch(budget):
    record("epoch", budget(epoch(), cpu_memory="16KiB", syncs=0, ops=2_000, warmup=1))


def test_plain():
    # Work outside any region, as an ordinary test before a budgeted one would do.
    x = torch.randn(256, 256)
    for _ in range(200):
        x = torch.tanh(x @ x.T / 256)
'''


def _run(inner, *tests: str) -> dict:
    (inner.pytester.path / "results.jsonl").unlink(missing_ok=True)
    result = inner.run("-p", "no:randomly", *[f"test_ordered.py::{t}" for t in tests])
    outcomes = inner.outcomes(result)
    assert set(outcomes.values()) == {"PASSED"}, result.stdout.str()
    out = {}
    for line in inner.read("results.jsonl").splitlines():
        name, cpu, syncs, ops = json.loads(line)
        out[name] = (cpu, syncs, ops)
    return out


def test_same_verdict_first_last_and_after_a_heavy_one(inner):
    inner.pytester.makepyfile(test_ordered=ORDERED)
    # Two processes give each region first and later: the heavy one first, then last after plain work;
    # the epoch first, then right after the heavy one.
    heavy_first = _run(inner, "test_heavy", "test_epoch")
    epoch_first = _run(inner, "test_epoch", "test_plain", "test_heavy")
    for name in ("heavy", "epoch"):
        runs = [heavy_first[name], epoch_first[name]]
        assert {(syncs, ops) for _, syncs, ops in runs} == {runs[0][1:]}, runs  # counts are exact
        peaks = [cpu for cpu, _, _ in runs]
        # A few KiB wherever it ran (the first heavy region used to measure about 1.3 MiB): malloc's end
        # reading moves by a few KiB with Python's own allocations, never by pybind's table.
        assert max(peaks) <= 16 * 1024, (name, peaks)
