"""TRN604 at run time (pytest_torchcheck/watch/checks/trn604_functional_dropout_ignores_mode.py): F.dropout left
at its default training=True in the forward of a module in eval mode is reported at the F.dropout line."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

BUGGY = """\
import torch
import torch.nn.functional as F

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return F.dropout(self.fc(x), 0.2)  # <-

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
model.eval()
with torch.no_grad():
    print(model(torch.randn(8, 4)))
"""


def test_functional_dropout_in_eval_mode_is_reported_at_its_line(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN604"])
    assert watched.lines == [("TRN604", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN604")
    assert "F.dropout(p=0.2)" in message and "Net.forward()" in message and "training=self.training" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_passing_the_mode_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace("0.2)", "0.2, training=self.training)"), ["TRN604"])
    assert watched.findings == [] and watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = """\
import torch
import torch.nn.functional as F

class McDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        x = F.dropout(self.fc(x), 0.2, True)  # Monte Carlo dropout, written out
        x = F.dropout(x, p=0.0)  # no dropout at all
        x = F.dropout1d(x[None], 0.1, self.training)[0]
        return self.drop(x)  # the layer follows the mode

def helper(x):
    return F.dropout(x, 0.3)  # outside any module: not about a mode

model = McDropout()
model.eval()
with torch.no_grad():
    model(torch.randn(8, 4))
model.train()
model(torch.randn(8, 4))
helper(torch.randn(3))
"""
    watched = watch_program(tmp_path, source, ["TRN604"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
