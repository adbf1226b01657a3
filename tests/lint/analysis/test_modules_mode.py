"""Mode dependence of module values: known layers decide, anything unseen is unknown."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.modules import ModuleFacts

_SRC = """
import torch.nn as nn
import torch.nn.functional as F
from elsewhere import Block

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 8), nn.ReLU())

class WithDrop(MLP):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

class Functional(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.1, self.training)

class Unknown(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

a = MLP()
b = WithDrop().cuda()
c = Functional()
d = Unknown()
e = nn.Linear(2, 2)
f = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
g = load()
"""


def test_mode_dependence_of_values() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(ModuleFacts)
    verdicts = {}
    for assign in model.nodes(cst.Assign):
        target = assign.targets[0].target
        if isinstance(target, cst.Name):
            verdicts[target.value] = facts.mode_dependent(target)
    assert verdicts == {"a": False, "b": True, "c": True, "d": None, "e": False, "f": True, "g": None}
