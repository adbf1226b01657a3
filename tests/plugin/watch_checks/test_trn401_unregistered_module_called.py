"""TRN401 at run time: a module called in a model's forward, held in a plain list/dict/tuple attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.watch_helpers import line_of, watch_program

LOOP = """\
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 4), torch.randn(16, 4)
for step in range(5):
    opt.zero_grad()
    F.mse_loss(model(x), y).backward()
    opt.step()
"""


def program(body: str) -> str:
    return "import torch\nimport torch.nn.functional as F\nfrom torch import nn\ntorch.manual_seed(0)\n" + body + LOOP


def check(tmp_path: Path, source: str):
    watched = watch_program(tmp_path, source, select=["TRN401"])
    assert watched.errors == [] and watched.code == 0
    return watched


def test_blocks_in_a_plain_list_are_reported_at_the_attributes_assignment(tmp_path: Path) -> None:
    source = program("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(4, 4) for _ in range(3)]  # <-
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        for block in self.blocks:
            x = torch.tanh(block(x))
        return self.head(x)
""")
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN401", line_of(source, "# <-"))]
    [message] = watched.messages("TRN401")
    assert message.startswith("`self.blocks` of Net is a plain list holding 3 modules (Linear) that "
                              "Net.forward() calls: they are not registered, so their 6 parameters (60 elements) "
                              "got gradients but no optimizer holds them")


def test_a_dict_filled_in_a_loop_elsewhere_is_reported_at_the_call(tmp_path: Path) -> None:
    # two assignments of the attribute: no single statement to point at, so the call in forward
    source = program("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = {}
        self.heads = {"a": nn.Linear(4, 4)}
        self.trunk = nn.Linear(4, 4)

    def forward(self, x):
        return self.heads["a"](self.trunk(x))  # <-
""")
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN401", line_of(source, "# <-"))]
    assert "plain dict holding 1 module (Linear)" in watched.messages("TRN401")[0]


@pytest.mark.parametrize("body", [
    pytest.param("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.named = nn.ModuleDict({"a": nn.Linear(4, 4)})

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.named["a"](x)
""", id="module-list-and-dict"),
    pytest.param("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.loss = [nn.MSELoss()]  # no parameters: nothing to train

    def forward(self, x, criterion=nn.Linear(4, 4)):
        return criterion(self.fc(x))  # a module passed in, not held by the model
""", id="module-passed-as-an-argument"),
    pytest.param("""\
teacher = nn.Linear(4, 4)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.teacher = [teacher]  # kept out of registration on purpose, queried without autograd

    def forward(self, x):
        with torch.no_grad():
            target = self.teacher[0](x)
        return self.fc(x) + 0 * target
""", id="no-grad-teacher-in-a-list"),
    pytest.param("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        t = nn.Linear(4, 4).requires_grad_(False)
        self.frozen = [t]  # frozen: no gradient reaches it

    def forward(self, x):
        return self.fc(x) + self.frozen[0](x)
""", id="frozen-module-in-a-list"),
    pytest.param("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.__dict__["teacher"] = nn.Linear(4, 4)  # not a container: deliberate

    def forward(self, x):
        return self.fc(x) + self.teacher(x)
""", id="dict-assignment-not-a-container"),
    pytest.param("""\
class Inner(nn.Module):
    def __init__(self, shared):
        super().__init__()
        self.refs = [shared]  # a sibling registered on the parent

    def forward(self, x):
        return self.refs[0](x)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(4, 4)
        self.inner = Inner(self.shared)

    def forward(self, x):
        return self.inner(x) + self.shared(x)
""", id="shared-module-registered-on-the-parent"),
])
def test_near_misses_are_not_reported(tmp_path: Path, body: str) -> None:
    assert check(tmp_path, program(body)).findings == []


def test_modules_in_a_list_that_an_optimizer_holds_all_the_same_are_not_reported(tmp_path: Path) -> None:
    source = """\
import torch
import torch.nn.functional as F
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(4, 4)]
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(self.blocks[0](x))

model = Net()
opt = torch.optim.SGD([*model.parameters(), *model.blocks[0].parameters()], lr=0.01)
x, y = torch.randn(16, 4), torch.randn(16, 4)
for step in range(5):
    opt.zero_grad()
    F.mse_loss(model(x), y).backward()
    opt.step()
"""
    assert check(tmp_path, source).findings == []
