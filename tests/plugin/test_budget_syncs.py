"""Sync budgets count what syncs with a device: torch's host-side bookkeeping does not, the user's reads do.

A correct training step meets ``syncs=0`` with every optimizer, a scheduler and a shuffling DataLoader;
a real read-back (``loss.item()``, GradScaler's found-inf check) is counted and named, the torch
function that made it included.
"""

from __future__ import annotations

import json

STEPS = '''
import json

import pytest
import torch
from torch import nn

DEVICE = "cpu"  # what a GPU run sets to "cuda": .to(DEVICE) must not count as a read-back

OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum_for_loop": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=False),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
    "adam_for_loop": lambda p: torch.optim.Adam(p, lr=1e-3, foreach=False),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
    "adamw_for_loop": lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=False),
    "adam_fused": lambda p: torch.optim.Adam(p, lr=1e-3, fused=True),
}


def record(name, value):
    with open("results.jsonl", "a") as f:
        f.write(json.dumps([name, value]) + "\\n")


def make(optimizer):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(DEVICE)
    opt = OPTIMIZERS[optimizer](model.parameters())
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    return model, opt, sched, loader


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_correct_epoch_meets_zero_syncs(budget, optimizer):
    model, opt, sched, loader = make(optimizer)

    def epoch():
        total = torch.zeros((), device=DEVICE)
        for x, y in loader:
            x, y = x.to(DEVICE), y.to(DEVICE)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        sched.step()
        return total

    # The first epoch creates the optimizer's state inside the region, later ones read it.
    record(optimizer, budget(epoch, syncs=0, repeats=2).syncs.total)


@pytest.mark.budget(syncs=0)
def test_loss_item_per_step_is_counted():
    model, opt, sched, loader = make("adam")
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"loss {loss.item():.3f}")
    sched.step()


def test_host_scalars_and_moves(budget):
    x = torch.randn(4)
    record("host_scalar", budget(lambda: (torch.tensor(0.5) * 2).item() + float(torch.full((), 3.0)),
                                 syncs=0).syncs.total)
    record("moved_scalar", budget(lambda: torch.tensor(0.5).to(DEVICE).item(), syncs=1).syncs.total)
    record("to_device", budget(lambda: x.to(DEVICE) + x.to(device=DEVICE), syncs=0).syncs.total)
    record("to_cpu_literal", budget(lambda: x.to("cpu"), syncs=1).syncs.total)
    record("batch_item", budget(lambda: torch.randn(3).sum().item(), syncs=1).syncs.total)


def scaler_step(optimizer):
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = OPTIMIZERS[optimizer](model.parameters())
    scaler = torch.amp.GradScaler("cpu")
    x = torch.randn(4, 8)

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def test_grad_scaler_with_a_fused_optimizer_meets_zero_syncs(budget):
    record("scaler_fused", budget(scaler_step("adam_fused"), syncs=0, warmup=1).syncs.total)


@pytest.mark.budget(syncs=0, warmup=1)
def test_grad_scaler_step_reads_found_inf():
    step = scaler_step("sgd")
    step()
'''


def _results(inner) -> dict:
    out: dict = {}
    for line in inner.read("results.jsonl").splitlines():
        name, value = json.loads(line)
        out.setdefault(name, []).append(value)
    return out


def test_sync_budgets_count_device_syncs_only(inner):
    inner.pytester.makepyfile(test_steps=STEPS)
    result = inner.run()
    outcomes = inner.outcomes(result)
    results = _results(inner)
    optimizers = ["sgd", "sgd_momentum_for_loop", "adam", "adam_for_loop", "adamw", "adamw_for_loop", "adam_fused"]
    for name in optimizers:
        assert outcomes[f"test_correct_epoch_meets_zero_syncs[{name}]"] == "PASSED", result.stdout.str()
        assert results[name] == [0]
    assert results["host_scalar"] == [0]  # 0-dim tensors made on the host stay there on a GPU too
    assert results["moved_scalar"] == [1]  # ... unless moved to the device
    assert results["to_device"] == [0]  # a copy to the device (here: to where it already is) reads nothing back
    assert results["to_cpu_literal"] == [1]
    assert results["batch_item"] == [1]  # a batch made without a device stands for a device tensor
    assert results["scaler_fused"] == [0]
    assert outcomes["test_host_scalars_and_moves"] == "PASSED"
    assert outcomes["test_grad_scaler_with_a_fused_optimizer_meets_zero_syncs"] == "PASSED"

    loss = inner.message(result, "test_loss_item_per_step_is_counted")
    loss.fnmatch_lines([
        "*budget exceeded: syncs 4 > limit 0 in region 'test body' of "
        "test_steps.py::test_loss_item_per_step_is_counted (device cpu)",
        "  syncs: 4 host-device synchronisation(s), limit 0; call sites:",
        "    4x .item() at test_steps.py:*  print(f\"loss {loss.item():.3f}\")",
    ], consecutive=True)
    assert len(loss.lines) <= 8
    assert "torch.optim" not in "\n".join(loss.lines)  # Adam's host step counter is not a sync

    scaler = inner.message(result, "test_grad_scaler_step_reads_found_inf")
    scaler.fnmatch_lines([
        "*budget exceeded: syncs 1 > limit 0 *",
        "  syncs: 1 host-device synchronisation(s), limit 0; call sites:",
        "    1x .item() at test_steps.py:*  scaler.step(opt) -> torch.amp.grad_scaler.GradScaler._maybe_opt_step",
    ], consecutive=True)
    assert len(scaler.lines) <= 8
