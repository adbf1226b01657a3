"""TRN902 (run time only): a detach() that cut an optimizer's parameters from every backward of the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
from torch import nn
torch.manual_seed(0)
x, y = torch.randn(16, 4), torch.randn(16, 2)
"""


def program(forward: str, setup: str = "", steps: int = 5) -> str:
    return HEAD + f"""\
class TwoBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.deep = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        self.shortcut = nn.Linear(4, 2)

    def forward(self, x, step=0):
{forward}

model = TwoBranch()
{setup}opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range({steps}):
    opt.zero_grad()
    F.mse_loss(model(x, step), y).backward()
    opt.step()
"""


def check(tmp_path: Path, source: str):
    watched = watch_program(tmp_path, source, select=["TRN902"])
    assert watched.errors == [] and watched.code == 0
    return watched


def test_a_detached_branch_is_reported_at_the_detach(tmp_path: Path) -> None:
    source = program("        return self.deep(x) + self.shortcut(x).detach()  # <-")
    watched = check(tmp_path, source)
    assert watched.lines == [("TRN902", line_of(source, "# <-"))]
    [message] = watched.messages("TRN902")
    assert message.startswith("detach() here cut 2 parameters (shortcut.weight, shortcut.bias) from every "
                              "backward: in 5 optimizer steps they never received a gradient while the "
                              "optimizer's other parameters did")


def test_a_branch_detached_a_few_operations_later_is_reported(tmp_path: Path) -> None:
    source = program("""\
        side = torch.relu(self.shortcut(x)) * 2
        return self.deep(x) + side.detach()  # <-""")
    assert check(tmp_path, source).lines == [("TRN902", line_of(source, "# <-"))]


@pytest.mark.parametrize("forward,setup,steps", [
    pytest.param("        return self.deep(x) + self.shortcut(x)", "", 5, id="both-branches-train"),
    pytest.param("        return self.deep(x)", "", 5, id="branch-never-called"),
    pytest.param("""\
        unused = self.shortcut(x)  # computed, not used: a pooler the task ignores
        return self.deep(x)""", "", 5, id="output-unused"),
    pytest.param("        return self.deep(x) + self.shortcut(x).detach()", "", 2, id="too-few-steps"),
    pytest.param("        return self.deep(x) + self.shortcut(x).detach()",
                 "model.shortcut.requires_grad_(False)\n", 5, id="frozen-branch"),
    pytest.param("        return self.deep(x) + self.shortcut(x).detach()",
                 "model.shortcut.load_state_dict(nn.Linear(4, 2).state_dict())  # pretrained, kept fixed\n", 5,
                 id="pretrained-branch-kept-fixed"),
    pytest.param("""\
        side = self.shortcut(x)
        return self.deep(x) + (side.detach() if step < 2 else side)  # warm-up: trained from step 2""", "", 5,
                 id="detached-during-warm-up-only"),
    pytest.param("""\
        out = self.deep(x) + self.shortcut(x)
        self.last = out.detach()  # kept for logging; the branch trains
        return out""", "", 5, id="detached-copy-for-logging"),
])
def test_near_misses_are_not_reported(tmp_path: Path, forward: str, setup: str, steps: int) -> None:
    assert check(tmp_path, program(forward, setup, steps)).findings == []


def test_a_branch_frozen_later_is_not_reported(tmp_path: Path) -> None:
    source = program("        return self.deep(x) + self.shortcut(x).detach()") + \
        "model.shortcut.requires_grad_(False)\n"
    assert check(tmp_path, source).findings == []


def test_a_model_read_whole_with_torch_load_and_detached_is_not_reported(tmp_path: Path) -> None:
    source = program("        return self.deep(x) + self.shortcut(x).detach()",
                     "torch.save(nn.Linear(4, 2), 'branch.pt')\n"
                     "model.shortcut = torch.load('branch.pt', weights_only=False)  # pretrained, kept fixed\n")
    assert check(tmp_path, source).findings == []


def test_a_part_built_from_an_installed_packages_class_is_not_reported(tmp_path: Path) -> None:
    # a pretrained backbone of an installed package (transformers, timm), its output detached on purpose
    package = tmp_path / "site-packages" / "backbones"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from torch import nn\nclass Backbone(nn.Linear):\n    pass\n")
    source = program("        return self.deep(x) + self.shortcut(x).detach()",
                     "import sys\nsys.path.insert(0, 'site-packages')\nfrom backbones import Backbone\n"
                     "model.shortcut = Backbone(4, 2)\n")
    try:
        assert check(tmp_path, source).findings == []
    finally:
        import sys

        sys.modules.pop("backbones", None)
