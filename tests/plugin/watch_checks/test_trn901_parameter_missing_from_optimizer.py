"""TRN901 (run time only): a parameter that receives gradients, between the trained ones and the loss,
which no optimizer holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
from torch import nn
torch.manual_seed(0)

class EncoderHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 16), nn.Tanh())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.encoder(x))

x, y = torch.randn(16, 4), torch.randn(16, 2)
"""

LOOP = """\
for step in range(5):
    opt.zero_grad()
    F.mse_loss(model(x), y).backward()
    opt.step()
"""


def check(tmp_path: Path, source: str):
    watched = watch_program(tmp_path, source, select=["TRN901"])
    assert watched.errors == [] and watched.code == 0
    return watched


def test_a_head_left_out_of_the_optimizer_is_reported_at_its_construction(tmp_path: Path) -> None:
    source = HEAD + """\
def train():
    model = EncoderHead()
    opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)  # <-
""" + "\n".join("    " + line for line in LOOP.splitlines()) + "\n\ntrain()\n"
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN901", line_of(source, "# <-"))]
    [message] = watched.messages("TRN901")
    assert message.startswith("2 parameters of EncoderHead (head.weight, head.bias) received gradients, but no "
                              "optimizer holds them and nothing changed them in 5 optimizer steps, while the "
                              "optimizer built here trained 80 elements of the model through them")


def test_a_head_added_after_the_optimizer_was_built_is_reported(tmp_path: Path) -> None:
    source = HEAD + """\
model = EncoderHead()
opt = torch.optim.Adam(model.parameters(), lr=0.01)  # <-
model.head = nn.Linear(16, 2)  # a new head: the optimizer holds the old one
""" + LOOP
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN901", line_of(source, "# <-"))]


@pytest.mark.parametrize("setup", [
    pytest.param("""\
model = EncoderHead()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
""", id="all-parameters"),
    pytest.param("""\
model = EncoderHead()
model.head.requires_grad_(False)
opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
""", id="frozen-head"),
    pytest.param("""\
model = EncoderHead()
opt = torch.optim.SGD(model.head.parameters(), lr=0.1)  # a backbone left out, below the trained head
""", id="backbone-left-out-below-the-head"),
    pytest.param("""\
model = EncoderHead()
opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
opt_head = torch.optim.SGD(model.head.parameters(), lr=0.1)
_step = opt.step
def both():
    _step()
    opt_head.step()
    opt_head.zero_grad()
opt.step = both
""", id="second-optimizer-for-the-head"),
    pytest.param("""\
model = EncoderHead()
opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
_step = opt.step
def manual():
    _step()
    with torch.no_grad():
        for p in model.head.parameters():
            p -= 0.1 * p.grad  # updated by hand
opt.step = manual
""", id="updated-by-hand"),
    pytest.param("""\
model = EncoderHead()
opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
_step = opt.step
def manual():
    _step()
    for p in model.head.parameters():
        p.data -= 0.1 * p.grad  # through .data
opt.step = manual
""", id="updated-through-data"),
    pytest.param("""\
class Prompted(nn.Module):
    def __init__(self):
        super().__init__()
        self.prompt = nn.Parameter(torch.zeros(4))
        self.lm = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))

    def forward(self, x):
        return self.lm(x + self.prompt)

model = Prompted()
opt = torch.optim.Adam([model.prompt], lr=0.01)  # a small part trained on a large fixed model
""", id="prompt-tuning"),
])
def test_near_misses_are_not_reported(tmp_path: Path, setup: str) -> None:
    assert check(tmp_path, HEAD + setup + LOOP).findings == []


def test_a_second_optimizer_built_later_for_the_head_silences_it(tmp_path: Path) -> None:
    source = HEAD + """\
model = EncoderHead()
opt = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
""" + LOOP + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)  # phase two: everything
""" + LOOP
    assert check(tmp_path, source).findings == []


def test_a_gans_two_optimizers_are_not_reported(tmp_path: Path) -> None:
    source = """\
import torch
torch.manual_seed(0)
G = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
D = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
for step in range(5):
    z, real = torch.randn(8, 2), torch.randn(8, 2)
    fake = G(z)
    opt_d.zero_grad()
    (D(fake.detach()).mean() - D(real).mean()).backward()
    opt_d.step()
    opt_g.zero_grad()
    (-D(fake).mean()).backward()  # reaches D's parameters too: opt_d holds them
    opt_g.step()
"""
    assert check(tmp_path, source).findings == []


def test_an_ema_teacher_whose_output_enters_the_loss_is_not_reported(tmp_path: Path) -> None:
    # mean teacher: the EMA copy gets gradients through the consistency term, no optimizer holds it, and
    # its values move with every EMA update
    source = HEAD + """\
import copy
model = EncoderHead()
ema = copy.deepcopy(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    opt.zero_grad()
    out = model(x)
    (F.mse_loss(out, y) + F.mse_loss(out, ema(x))).backward()
    opt.step()
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.lerp_(p, 0.1)
"""
    assert check(tmp_path, source).findings == []
