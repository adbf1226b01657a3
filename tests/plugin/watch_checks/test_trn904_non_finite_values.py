"""TRN904 at run time (pytest_torchcheck/watch/checks/trn904_non_finite_values.py): a non-finite loss or
gradient is reported at the call of the first module that produced a NaN/Inf from finite inputs (or at the
backward/step when none did); masks of -inf, finite losses and GradScaler overflows are not."""

from __future__ import annotations

from pytest_torchcheck.watch.checks.trn904_non_finite_values import NonFiniteValues
from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)

class LogScale(torch.nn.Module):
    def forward(self, x):
        return torch.log(x)

class Net(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
        self.scale = scale
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.encoder(x)
        h = self.scale(h)  # scale here
        return self.head(h)

x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
"""

BUGGY = HEAD + """\
model = Net(LogScale())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
"""


def test_a_nan_loss_is_reported_at_the_module_that_made_the_first_non_finite_value(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN904"])
    assert watched.lines == [("TRN904", line_of(BUGGY, "# scale here"))]
    [message] = watched.messages("TRN904")
    assert "the loss given to backward() holds 1 NaN" in message
    assert "LogScale (scale in Net)" in message and "of 128 elements while its inputs were finite" in message
    assert watched.errors == []


def test_its_fixed_twin_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace("torch.log(x)", "torch.log1p(x)"), ["TRN904"])
    assert watched.findings == [] and watched.errors == []


def test_non_finite_gradients_from_a_finite_loss_are_reported_at_the_step(tmp_path) -> None:
    source = HEAD + """\
model = Net(torch.nn.Identity())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
out = model(x)
loss = torch.sqrt(out.relu() * 0).sum()  # sqrt at 0: a finite loss, an infinite gradient
loss.backward()
opt.step()  # <-
"""
    watched = watch_program(tmp_path, source, ["TRN904"])
    assert watched.lines == [("TRN904", line_of(source, "# <-"))]
    assert "hold NaN or Inf" in watched.messages("TRN904")[0]
    assert "no module turned finite inputs into NaN or Inf" in watched.messages("TRN904")[0]


def test_non_finite_data_is_not_blamed_on_the_first_module(tmp_path) -> None:
    source = HEAD + """\
model = Net(torch.nn.Identity())
x[0, 0] = float("nan")  # a corrupt sample
F.cross_entropy(model(x), y).backward()  # <-
"""
    watched = watch_program(tmp_path, source, ["TRN904"])
    assert watched.lines == [("TRN904", line_of(source, "# <-"))]
    assert "the data, an operation outside the modules" in watched.messages("TRN904")[0]


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
class Mask(torch.nn.Module):
    def forward(self, h):
        return h.masked_fill(torch.arange(8) >= 6, float("-inf"))  # an attention-style mask

model = Net(Mask())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model.head(model.encoder(x)), y)
    scores = model.scale(model.encoder(x)).softmax(dim=1)  # -inf masked away: finite
    (loss + (scores * torch.randn(16, 8)).sum()).backward()
    opt.step()
with torch.no_grad():
    torch.log(torch.zeros(3))  # no autograd, no step: nothing trained with it
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 100)
opt.zero_grad()
scaler.scale(F.cross_entropy(model.head(model.encoder(x)), y) * 1e30).backward()  # overflows: skipped
scaler.step(opt)
scaler.update()
"""
    watched = watch_program(tmp_path, source, ["TRN904"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0


def test_it_is_opt_in_and_documented_as_a_runtime_only_code() -> None:
    assert NonFiniteValues.DEFAULT is False
    assert NonFiniteValues.SUMMARY and NonFiniteValues.NAME == "non-finite-values"
    for section in ("## What it does", "## Why is this bad?", "## Example", "Use instead:"):
        assert section in NonFiniteValues.DOC
