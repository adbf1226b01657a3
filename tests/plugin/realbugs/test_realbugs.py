"""Runtime reproductions of real training bugs, each with its fixed twin, and the check that catches it.

Every case is written from scratch after a public bug report (``REPORT``): a tiny model on
synthetic data that shows the same bug. ``buggy`` and ``fixed`` differ only in the planted
line. The test runs the documented check a user would pick on both: the buggy variant must
fail with a message naming the cause, the fixed one must pass. ``DDP`` cases live in
``test_realbugs_ddp.py`` (real gloo groups through the harness).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pytest_torchcheck import (TorchcheckFailure, assert_deterministic, assert_eval_mode, assert_modules_registered,
                               assert_no_graph_retained, assert_overfits, assert_params_update,
                               assert_step_gradients, assert_train_mode)


@dataclass(frozen=True)
class Case:
    report: str  # the public bug report this reproduces
    check: str  # the documented check that catches it
    run: Callable[[bool], object]  # run(buggy) runs the check on the buggy (True) or fixed (False) variant
    cause: str  # a regular expression the failure message must match


def data(n: int = 6, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 4, generator=g), torch.randint(0, 2, (8, 1), generator=g).float()) for _ in range(n)]


def mlp(*extra: nn.Module) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), *extra, nn.Linear(16, 1))


def bce(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(model(batch[0]), batch[1])


# ------------------------------------------------------------------ frozen layers
def frozen_layers(buggy: bool) -> None:
    """Layers frozen after some training keep moving: their gradients are zero tensors, not None, and SGD's
    momentum buffers still push them (zero_grad(set_to_none=False), as older torch did by default)."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    batches = data()
    opt.zero_grad()
    bce(model, batches[0]).backward()
    opt.step()
    model[0].requires_grad_(False)  # freeze the first layer for fine-tuning

    def step() -> None:
        opt.zero_grad(set_to_none=not buggy)  # BUG when buggy: zero-filled gradients keep the layer in the update
        bce(model, batches[1]).backward()
        opt.step()

    assert_params_update(model, opt, step)


# ------------------------------------------------------------------ optimizer over a non-leaf tensor
class Regression(nn.Module):
    def __init__(self, buggy: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.weight = nn.Parameter(torch.randn(4, 1))
        # BUG when buggy: a float64 copy made once; the optimizer steps the leaf, the forward reads the stale copy.
        self.weight64 = self.weight.double() if buggy else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight64 if self.weight64 is not None else self.weight.double()
        return x.double() @ weight


def non_leaf_optimized(buggy: bool) -> None:
    model = Regression(buggy)
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(2))
    y = x.double() @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    assert_overfits(model, (x, y), F.mse_loss, opt, steps=200)


def non_leaf_registered(buggy: bool) -> None:
    assert_modules_registered(Regression(buggy))


# ------------------------------------------------------------------ in-place op on a view of the data
class InPlaceNormalize(nn.Module):
    def __init__(self, buggy: bool) -> None:
        super().__init__()
        self.buggy = buggy
        self.register_buffer("mean", torch.full((4,), 0.5))
        self.net = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # BUG when buggy: sub_ on a view of the stored dataset normalises the data itself, again at every call.
        x = x.sub_(self.mean) if self.buggy else x - self.mean
        return self.net(x)


def in_place_on_view(buggy: bool) -> None:
    torch.manual_seed(0)
    model, dataset = InPlaceNormalize(buggy).eval(), torch.randn(32, 4)
    with torch.no_grad():
        assert_deterministic(lambda: model(dataset[:8]))  # dataset[:8] is a view, as a DataLoader batch can be


# ------------------------------------------------------------------ a loss kept with its graph
def loss_kept_with_graph(buggy: bool) -> None:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def epoch() -> float:
        running = torch.zeros(())
        for batch in data():
            opt.zero_grad()
            loss = bce(model, batch)
            loss.backward()
            opt.step()
            running = running + (loss if buggy else loss.detach())  # BUG when buggy: keeps every graph
        return running.item()

    assert_no_graph_retained(opt, epoch)


# ------------------------------------------------------------------ unregistered members
class PlainList(nn.Module):
    def __init__(self, buggy: bool) -> None:
        super().__init__()
        blocks = [nn.Linear(4, 4) for _ in range(3)]
        self._layers = blocks if buggy else nn.ModuleList(blocks)  # BUG when buggy: invisible to .parameters()
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self._layers:
            x = torch.relu(layer(x))
        return self.head(x)


def modules_in_plain_list(buggy: bool) -> None:
    assert_modules_registered(PlainList(buggy))


class Temperature(nn.Module):
    def __init__(self, buggy: bool) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 3)
        # BUG when buggy: a plain tensor: never in model.parameters(), so never trained, never saved.
        self.temperature = torch.ones(1, requires_grad=True) if buggy else nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) / self.temperature


def tensor_attribute_unregistered(buggy: bool) -> None:
    assert_modules_registered(Temperature(buggy))


# ------------------------------------------------------------------ zero_grad and gradient accumulation
def missing_zero_grad(buggy: bool) -> None:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run(batches: object) -> None:
        for batch in batches:
            if not buggy:
                opt.zero_grad()  # BUG when buggy: missing, gradients pile up across steps
            bce(model, batch).backward()
            opt.step()

    assert_step_gradients(model, opt, run, data(), bce)


def zero_grad_once_per_epoch(buggy: bool) -> None:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run(batches: object) -> None:
        for epoch in range(2):
            if buggy:
                opt.zero_grad()  # BUG when buggy: once per epoch instead of once per step
            for batch in batches:
                if not buggy:
                    opt.zero_grad()
                bce(model, batch).backward()
                opt.step()

    assert_step_gradients(model, opt, run, data(3), bce)


ACCUMULATE = 3


def accumulation_not_averaged(buggy: bool) -> None:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run(batches: object) -> None:
        for i, batch in enumerate(batches):
            loss = bce(model, batch)
            (loss if buggy else loss / ACCUMULATE).backward()  # BUG when buggy: the sum of 3 gradients
            if (i + 1) % ACCUMULATE == 0:
                opt.step()
                opt.zero_grad()

    assert_step_gradients(model, opt, run, data(), bce)


def accumulation_cleared_per_micro_batch(buggy: bool) -> None:
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def run(batches: object) -> None:
        for i, batch in enumerate(batches):
            if buggy:
                opt.zero_grad()  # BUG when buggy: clears the micro-batches accumulated so far
            (bce(model, batch) / ACCUMULATE).backward()
            if (i + 1) % ACCUMULATE == 0:
                opt.step()
                if not buggy:
                    opt.zero_grad()

    assert_step_gradients(model, opt, run, data(), bce)


# ------------------------------------------------------------------ module modes
def classifier() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))


def train_mode_not_restored(buggy: bool) -> None:
    model, batches = classifier(), data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def validate() -> None:
        model.eval()
        with torch.no_grad():
            model(batches[0][0])

    def fit() -> None:
        model.train()
        for epoch in range(2):
            if not buggy:
                model.train()  # BUG when buggy: missing after validate() switched to eval mode
            for x, y in batches[1:3]:
                opt.zero_grad()
                F.cross_entropy(model(x), y.long().squeeze(1)).backward()
                opt.step()
            validate()

    assert_train_mode(model, opt, fit)


def evaluation_in_train_mode(buggy: bool) -> None:
    model, (x, _) = classifier(), data(1)[0]

    def accuracy() -> torch.Tensor:
        if not buggy:
            model.eval()  # BUG when buggy: missing, dropout and batch statistics stay on
        with torch.no_grad():
            return model(x).argmax(1)

    assert_eval_mode(model, accuracy)


class FunctionalDropout(nn.Module):
    def __init__(self, buggy: bool) -> None:
        super().__init__()
        self.buggy = buggy
        self.proj = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.proj(x))
        # BUG when buggy: F.dropout defaults to training=True whatever the module's mode.
        h = F.dropout(h, 0.3) if self.buggy else F.dropout(h, 0.3, training=self.training)
        return self.head(h)


def dropout_left_on_in_eval(buggy: bool) -> None:
    torch.manual_seed(0)
    model, x = FunctionalDropout(buggy).eval(), torch.randn(8, 4)
    with torch.no_grad():
        assert_deterministic(lambda: model(x))


CASES = {
    "frozen_layers_still_move": Case(
        "https://github.com/open-mmlab/OpenPCDet/issues/845", "assert_params_update", frozen_layers,
        r"frozen parameter\(s\) changed:\n  0\.weight \(16, 4\): requires_grad=False but changed"),
    "optimizer_steps_a_leaf_the_forward_never_reads": Case(
        "https://github.com/pytorch/pytorch/issues/4761", "assert_overfits", non_leaf_optimized,
        r"did not fall below"),
    "non_leaf_copy_kept_as_attribute": Case(
        "https://github.com/pytorch/pytorch/issues/4761", "assert_modules_registered", non_leaf_registered,
        r"Regression\.weight64: tensor attribute \(4, 1\) requires grad but is not a registered parameter"),
    "in_place_op_on_a_view_of_the_data": Case(
        "https://github.com/pytorch/vision/issues/680", "assert_deterministic", in_place_on_view,
        r"run 1 and run 2 differ in output .*\n  seeded with 0 and 1; InPlaceNormalize modified its input\[0\] in "
        r"place during run 1 \(version 0 -> 1\); likely cause: an in-place op on the input"),
    "loss_kept_with_its_graph": Case(
        "https://github.com/BatsResearch/labelmodels/issues/4", "assert_no_graph_retained", loss_kept_with_graph,
        r"grow: .*\n  largest: .* held by variable 'running' of epoch\(\)"),
    "modules_in_a_plain_private_list": Case(
        "https://github.com/pytorch/pytorch/issues/59925", "assert_modules_registered", modules_in_plain_list,
        r"PlainList\._layers: plain list holding 3 Module\(s\); use nn\.ModuleList"),
    "tensor_attribute_not_registered": Case(
        "https://github.com/pytorch/pytorch/issues/10534", "assert_modules_registered",
        tensor_attribute_unregistered,
        r"Temperature\.temperature: tensor attribute \(1,\) requires grad but is not a registered parameter"),
    "missing_zero_grad_with_bce": Case(
        "https://github.com/wenet-e2e/wekws/pull/73", "assert_step_gradients", missing_zero_grad,
        r"at optimizer step 2.*\n.*\n  likely cause: the gradients of step 1 are still in \.grad"),
    "zero_grad_once_per_epoch": Case(
        "https://github.com/pytorch/pytorch/issues/47175", "assert_step_gradients", zero_grad_once_per_epoch,
        r"at optimizer step 2.*\n.*\n  likely cause: the gradients of step 1 are still in \.grad"),
    "accumulation_not_averaged": Case(
        "https://github.com/karpathy/nanoGPT/issues/206", "assert_step_gradients", accumulation_not_averaged,
        r"the 3 micro-batch gradients are summed, not averaged"),
    "accumulation_cleared_every_micro_batch": Case(
        "https://github.com/bytetriper/RAE/issues/67", "assert_step_gradients",
        accumulation_cleared_per_micro_batch, r"only the last micro-batch's gradient is left"),
    "train_mode_not_restored_after_validation": Case(
        "https://github.com/fartashf/vsepp/issues/4", "assert_train_mode", train_mode_not_restored,
        r"optimizer step 3 trained Sequential with 6 module\(s\) in eval mode"),
    "evaluation_in_train_mode": Case(
        "https://github.com/wolny/pytorch-3dunet/issues/53", "assert_eval_mode", evaluation_in_train_mode,
        r"accuracy called 'Sequential' \(Sequential\) outside evaluation mode: in training mode\n"
        r"  6 module\(s\) in training mode"),
    "functional_dropout_left_on_in_eval": Case(
        "https://github.com/pytorch/pytorch/issues/26338", "assert_deterministic", dropout_left_on_in_eval,
        r"run 1 seeded with 0, run 2 with 1 .*likely cause: randomness that ignores the module mode: F\.dropout"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_check_catches_the_bug_and_passes_its_fixed_twin(name: str) -> None:
    case = CASES[name]
    with pytest.raises(TorchcheckFailure) as caught:
        case.run(True)
    assert caught.value.check == case.check
    assert re.search(case.cause, str(caught.value)), str(caught.value)
    case.run(False)  # the fixed twin passes the same check


def test_assert_overfits_alone_misses_zero_grad_bugs_with_bce() -> None:
    """Why assert_step_gradients exists: with a (B)CE loss, accumulated gradients still point downhill,
    so the one-batch overfitting check converges on the buggy loop as well."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    batch = data(1)[0]

    def step(_: object) -> torch.Tensor:  # no zero_grad at all
        loss = bce(model, batch)
        loss.backward()
        opt.step()
        return loss

    curve = assert_overfits(model, batch, train_step=step, steps=300)
    assert curve[-1] < 0.05 * curve[0]
