"""TRN502 at run time (pytest_torchcheck/watch/checks/trn502_sigmoid_before_bce_loss.py): sigmoid outputs that
saturated on the wrong side of their target are reported at the loss line; unsaturated ones are not."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
with torch.no_grad():
    model.weight.mul_(100.0)  # confident: logits far beyond +-17
targets = (model(x) < 0).float()  # every target on the other side of its prediction
"""

BUGGY = HEAD + """\
for _ in range(3):
    opt.zero_grad()
    loss = F.binary_cross_entropy(model(x).sigmoid(), targets)  # <-
    loss.backward()
    opt.step()
"""


def test_saturated_sigmoid_outputs_are_reported_at_the_loss_line(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN502"])
    assert watched.lines == [("TRN502", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN502")
    assert "of 8 elements saturated" in message and "float32" in message and "-100" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_with_logits_is_clean(tmp_path) -> None:
    source = BUGGY.replace("F.binary_cross_entropy(model(x).sigmoid()", "F.binary_cross_entropy_with_logits(model(x)")
    watched = watch_program(tmp_path, source, ["TRN502"])
    assert watched.findings == [] and watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
bce = torch.nn.BCELoss()
for _ in range(20):
    opt.zero_grad()
    logits = model(x)
    loss = bce(logits.sigmoid(), (logits > 0).float())  # saturated towards its own target: harmless
    loss = loss + bce((logits / 1000).sigmoid(), targets)  # wrong but not saturated: a gradient flows
    loss = loss + F.binary_cross_entropy(logits.sigmoid().clamp(1e-6, 1 - 1e-6), targets)  # clamped
    weight = torch.zeros_like(targets)
    loss = loss + F.binary_cross_entropy(logits.sigmoid(), targets, weight=weight)  # weighted out
    loss.backward()
    opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN502"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
