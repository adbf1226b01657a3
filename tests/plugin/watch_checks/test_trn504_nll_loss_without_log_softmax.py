"""TRN504 at run time (pytest_torchcheck/watch/checks/trn504_nll_loss_without_log_softmax.py): nll_loss given
raw logits or probabilities is reported at the loss line; log-probabilities, padding and NaN rows are not."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
"""

BUGGY = HEAD + """\
for _ in range(3):
    opt.zero_grad()
    loss = F.nll_loss(model(x), y)  # <-
    loss.backward()
    opt.step()
"""


def test_raw_logits_given_to_nll_loss_are_reported_at_the_loss_line(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN504"])
    assert watched.lines == [("TRN504", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN504")
    assert "in 8 of 8 samples" in message and "3 class values" in message and "more than any distribution" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_with_log_softmax_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace("model(x), y", "F.log_softmax(model(x), dim=1), y"), ["TRN504"])
    assert watched.findings == [] and watched.errors == []


def test_logits_running_away_are_reported_with_an_infinite_mass(tmp_path) -> None:
    source = HEAD + """\
loss = F.nll_loss(model(x) * 1e4, y)  # <-
"""
    watched = watch_program(tmp_path, source, ["TRN504"])
    assert watched.lines == [("TRN504", line_of(source, "# <-"))]
    assert "to inf, more than any distribution" in watched.messages("TRN504")[0]
    assert watched.errors == []


def test_softmax_probabilities_given_to_nn_nll_loss_are_reported(tmp_path) -> None:
    source = HEAD + """\
criterion = torch.nn.NLLLoss()
loss = criterion(model(x).softmax(dim=1), y)  # <-
"""
    watched = watch_program(tmp_path, source, ["TRN504"])
    assert watched.lines == [("TRN504", line_of(source, "# <-"))]
    assert "came from softmax(): use log_softmax()" in watched.messages("TRN504")[0]
    assert watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
pad = torch.tensor([0, 1, -100, 2, -100, 0, 1, 2])
seq = torch.randn(2, 3, 5, requires_grad=True)
for _ in range(40):
    opt.zero_grad()
    logp = F.log_softmax(model(x), dim=1)
    loss = F.nll_loss(logp, y)
    # padded samples filled with zeros are ignored by ignore_index
    loss = loss + F.nll_loss(logp.masked_fill((pad == -100)[:, None], 0.0), pad)
    loss = loss + F.nll_loss(torch.log(model(x).softmax(dim=1) + 1e-8), y)  # log of probabilities
    loss = loss + F.nll_loss(F.log_softmax(seq, dim=1), torch.randint(0, 3, (2, 5)))  # (N, C, d) input
    logp_masked = F.log_softmax(model(x).masked_fill(torch.arange(3) == 2, float("-inf")), dim=1)
    loss = loss + F.nll_loss(logp_masked, torch.zeros(8, dtype=torch.long))  # a masked class: -inf
    loss = loss + F.nll_loss(logp[:, :2], y.clamp(max=1))  # log-probabilities of two of the classes
    loss.backward()
    opt.step()
F.nll_loss(torch.full((4, 3), float("nan")), torch.zeros(4, dtype=torch.long))  # NaN: another bug
"""
    watched = watch_program(tmp_path, source, ["TRN504"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
