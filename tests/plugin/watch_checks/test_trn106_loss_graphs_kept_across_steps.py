"""TRN106 at run time: a variable, attribute or container of the user's that keeps earlier steps' graphs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 4), torch.randn(16, 2)
"""


def check(tmp_path: Path, source: str):
    watched = watch_program(tmp_path, HEAD + source, select=["TRN106"])
    assert watched.errors == [] and watched.code == 0
    return watched


def test_a_float_running_total_is_reported_at_the_addition(tmp_path: Path) -> None:
    source = """\
total_loss = 0.0
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    total_loss += loss  # <-
"""
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN106", line_of(HEAD + source, "# <-"))]
    [message] = watched.messages("TRN106")
    assert message.startswith("`total_loss` holds a tensor whose autograd graph reaches the losses of 4 earlier "
                              "optimizer steps (steps 1 to 4, seen at the end of step 5)")


def test_an_in_place_total_in_a_dict_is_reported_at_the_addition(tmp_path: Path) -> None:
    source = """\
def train(stats):
    for step in range(12):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        stats["loss"] += loss  # <-

train({"loss": torch.zeros(())})
"""
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN106", line_of(HEAD + source, "# <-"))]
    assert watched.messages("TRN106")[0].startswith("`stats['loss']` holds")


def test_the_terms_of_a_summed_loss_kept_one_by_one_are_reported_at_the_addition(tmp_path: Path) -> None:
    # the backward runs on the sum; the totals hold its terms, operations below the sum (a detector's
    # box, objectness and class losses)
    source = """\
totals = {}
for step in range(12):
    out = model(x)
    each = {"a": F.mse_loss(out[:, 0], y[:, 0]), "b": F.l1_loss(out[:, 1], y[:, 1])}
    opt.zero_grad()
    sum(each.values()).backward()
    opt.step()
    for name, value in each.items():
        totals[name] = totals.get(name, 0.0) + value  # <-
"""
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN106", line_of(HEAD + source, "# <-"))]
    assert watched.messages("TRN106")[0].startswith("`totals['a']` holds a tensor whose autograd graph reaches "
                                                    "the losses of 4 earlier optimizer steps")


def test_a_list_attribute_of_the_users_object_is_reported_at_the_step(tmp_path: Path) -> None:
    source = """\
class Trainer:
    def __init__(self):
        self.losses = []

    def fit(self):
        for step in range(12):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()  # <-
            self.losses.append(loss)

Trainer().fit()
"""
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN106", line_of(HEAD + source, "# <-"))]
    assert watched.messages("TRN106")[0].startswith("`self.losses` holds")


def test_a_total_reset_with_zero_keeps_its_chain_and_is_reported(tmp_path: Path) -> None:
    source = """\
running = torch.zeros(())
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    running += loss  # <-
    if step % 2 == 1:
        running.zero_()
"""
    assert check(tmp_path, source).lines == [("TRN106", line_of(HEAD + source, "# <-"))]


@pytest.mark.parametrize("source", [
    pytest.param("""\
total = 0.0
history = {"loss": []}
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    total += loss.item()
    history["loss"].append(loss.detach())
""", id="item-and-detached-list"),
    pytest.param("""\
total = torch.zeros(())
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    total += loss.detach()
""", id="detached-total"),
    pytest.param("""\
prev_loss = None
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if prev_loss is not None and loss > prev_loss:
        pass
    prev_loss = loss  # one step more, never more
""", id="kept-one-extra-step"),
    pytest.param("""\
window = []
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    window = (window + [loss])[-2:]  # a two-step method: the last two losses, never more
""", id="two-step-window"),
    pytest.param("""\
for step in range(12):
    opt.zero_grad()
    total = 0.0
    for i in range(4):  # micro-batches summed within the step, one backward
        total = total + F.mse_loss(model(x[i::4]), y[i::4]) / 4
    total.backward()
    opt.step()
""", id="micro-batches-summed-in-one-step"),
    pytest.param("""\
for step in range(12):
    opt.zero_grad()
    losses = []
    for i in range(4):
        loss = F.mse_loss(model(x[i::4]), y[i::4]) / 4
        loss.backward()
        losses.append(loss)  # within one step only
    opt.step()
""", id="micro-batch-losses-kept-within-the-step"),
    pytest.param("""\
D = torch.nn.Linear(2, 1)
opt_d = torch.optim.SGD(D.parameters(), lr=0.01)
for step in range(12):
    fake = model(x)
    opt_d.zero_grad()
    loss_d = D(fake.detach()).mean() - D(y).mean()
    loss_d.backward()
    opt_d.step()
    opt.zero_grad()
    loss_g = -D(fake).mean()
    loss_g.backward()
    opt.step()
""", id="gan"),
])
def test_near_misses_are_not_reported(tmp_path: Path, source: str) -> None:
    assert check(tmp_path, source).findings == []


def test_a_holder_seen_only_at_the_last_look_is_reported_at_the_step_when_the_program_ends(tmp_path: Path) -> None:
    # 4 steps: the look at the end of step 4 sees it; no later step shows which line grew it
    source = """\
total_loss = 0.0
for step in range(4):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()  # <-
    total_loss = total_loss + loss
"""
    assert check(tmp_path, source).lines == [("TRN106", line_of(HEAD + source, "# <-"))]


def test_a_meta_loss_over_differentiable_steps_is_not_reported(tmp_path: Path) -> None:
    source = """\
w0 = torch.randn(4, 2, requires_grad=True)
w = w0.clone()
w.retain_grad()
meta = torch.optim.SGD([w], lr=0.01, differentiable=True)  # steps inside the graph
meta_loss = 0.0
for step in range(12):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward(retain_graph=True)
    meta.step()
    meta_loss = meta_loss + loss  # the unrolled objective, backpropagated at the end
meta_loss.backward()
"""
    assert check(tmp_path, source).findings == []


def test_a_look_at_the_users_frames_keeps_none_of_their_tensors_alive(tmp_path: Path) -> None:
    # reading a function's f_locals leaves a snapshot on its frame; the step-4 look must not make the
    # loss of step 4 outlive its rebinding
    source = """\
import weakref

def train():
    refs = []
    for step in range(6):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        refs.append(weakref.ref(loss))
    loss = None
    alive = [i + 1 for i, ref in enumerate(refs) if ref() is not None]
    assert not alive, f"the losses of steps {alive} are still alive"

train()
"""
    assert check(tmp_path, source).findings == []


def test_a_list_in_a_history_dict_is_reported_naming_its_key(tmp_path: Path) -> None:
    source = """\
history = {"loss": [], "lr": []}
for step in range(12):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()  # <-
    history["loss"].append(loss)
    history["lr"].append(0.01)
"""
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN106", line_of(HEAD + source, "# <-"))]
    assert watched.messages("TRN106")[0].startswith("`history['loss']` holds")
