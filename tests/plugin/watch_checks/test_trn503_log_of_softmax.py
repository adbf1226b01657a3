"""TRN503 at run time (pytest_torchcheck/watch/checks/trn503_log_of_softmax.py): log() of softmax probabilities
that gave -inf is reported at the log line; finite logs, log(p + eps) and log_softmax are not."""

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
    logp = torch.log(F.softmax(model(x) * 1000, dim=1))  # <-
    loss = F.nll_loss(logp, y)
    loss.backward()
    opt.step()
"""


def test_log_of_softmax_reaching_minus_inf_is_reported_at_the_log_line(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN503"])
    assert watched.lines == [("TRN503", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN503")
    assert "-inf in" in message and "of 24 elements" in message and "log_softmax()" in message
    assert watched.errors == []


def test_the_tensor_method_is_reported_too(tmp_path) -> None:
    source = HEAD + """\
logp = (model(x) * 1000).softmax(dim=1).log()  # <-
"""
    watched = watch_program(tmp_path, source, ["TRN503"])
    assert watched.lines == [("TRN503", line_of(source, "# <-"))]
    assert watched.errors == []


def test_its_fixed_twin_with_log_softmax_is_clean(tmp_path) -> None:
    source = BUGGY.replace("torch.log(F.softmax(model(x) * 1000, dim=1))", "F.log_softmax(model(x) * 1000, dim=1)")
    watched = watch_program(tmp_path, source, ["TRN503"])
    assert watched.findings == [] and watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
for _ in range(3):
    opt.zero_grad()
    logits = model(x)
    a = torch.log(F.softmax(logits, dim=1))  # no probability underflowed
    b = torch.log(F.softmax(logits * 1000, dim=1) + 1e-12)  # log(p + eps)
    c = torch.log(F.softmax(logits * 1000, dim=1).clamp(min=1e-12))
    d = torch.log(torch.relu(logits))  # -inf, but not of probabilities
    with torch.no_grad():
        e = torch.log(F.softmax(logits * 1000, dim=1))  # no autograd: where it came from is unknown
    F.nll_loss(a + b + c, y).backward()
    opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN503"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
