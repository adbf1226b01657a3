"""TRN501 at run time (pytest_torchcheck/watch/checks/trn501_softmax_before_cross_entropy.py): probabilities
given to cross_entropy are reported at the loss line; logits, soft targets and label smoothing are not."""

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
criterion = torch.nn.CrossEntropyLoss()
for _ in range(3):
    opt.zero_grad()
    loss = criterion(model(x).softmax(dim=1), y)  # <-
    loss.backward()
    opt.step()
"""


def test_softmax_probabilities_given_to_cross_entropy_are_reported_at_the_loss_line(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN501"])
    assert watched.lines == [("TRN501", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN501")
    assert "came from softmax()" in message and "3 class scores" in message and "8 rows" in message
    assert "log(3) = 1.099" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_with_logits_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace(".softmax(dim=1)", ""), ["TRN501"])
    assert watched.findings == [] and watched.errors == []


def test_probabilities_made_without_autograd_are_reported_by_their_values(tmp_path) -> None:
    source = HEAD + """\
with torch.no_grad():
    probs = model(x).softmax(dim=1)
    for _ in range(2):
        print(F.cross_entropy(probs.clone(), y))  # <-
"""
    watched = watch_program(tmp_path, source, ["TRN501"])
    assert watched.lines == [("TRN501", line_of(source, "# <-"))]
    assert "holds probabilities" in watched.messages("TRN501")[0]
    assert watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
soft = torch.softmax(torch.randn(8, 3), dim=1)
for _ in range(40):
    opt.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits, soft)  # soft targets (distillation): the target is probabilities
    loss = loss + F.cross_entropy(logits, y, label_smoothing=0.1)
    loss = loss + F.cross_entropy(logits.relu(), y)  # non-negative logits that do not sum to 1
    loss = loss + F.cross_entropy(logits[:, :1].softmax(dim=1), torch.zeros(8, dtype=torch.long))  # one class
    loss = loss + F.cross_entropy(logits.softmax(dim=0), y)  # softmax over the batch: rows do not sum to 1
    loss.backward()
    opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN501"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
