"""Shared program facts: value kinds, grad mode, training loops, statement order."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.training import BACKWARD, CLEAR, STEP


def model_of(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def name_node(model: FileModel, text: str, nth: int = -1) -> cst.CSTNode:
    """The nth reference to ``text`` (a Name or a dotted attribute) in document order."""
    found = []
    for node in model.ordered:
        if isinstance(node, cst.Call):
            for part in (node.func, *[a.value for a in node.args]):
                if isinstance(part, cst.Attribute):
                    part = part.value
                if cst.Module([]).code_for_node(part) == text:
                    found.append(part)
    return found[nth]


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("import torch\nopt = torch.optim.AdamW(p)\nuse(opt)", "optimizer"),
        ("from torch.optim import SGD as S\nopt = S(p)\nuse(opt)", "optimizer"),
        ("import torch\nclass O(torch.optim.Optimizer): pass\nx = O(p)\nuse(x)", "optimizer"),
        ("import torch\ns = torch.amp.GradScaler()\nuse(s)", "scaler"),
        ("import torch\ns = torch.cuda.amp.GradScaler()\nuse(s)", "scaler"),
        ("import torch\nsch = torch.optim.lr_scheduler.StepLR(o, 1)\nuse(sch)", "scheduler"),
        ("from torch.utils.data import DistributedSampler\nsm = DistributedSampler(ds)\nuse(sm)", "sampler"),
        ("from torch.utils.data import DataLoader\ndl = DataLoader(ds)\nuse(dl)", "loader"),
        ("import torch.nn as nn\ncrit = nn.CrossEntropyLoss()\nuse(crit)", "criterion"),
        ("import torch.nn as nn\ncrit = nn.CrossEntropyLoss()\nl = crit(a, b)\nuse(l)", "loss"),
        ("import torch.nn.functional as F\nl = F.mse_loss(a, b)\nuse(l)", "loss"),
        ("import torch.nn as nn\nm = nn.Linear(2, 2)\nuse(m)", "module"),
        ("import torch.nn as nn\nclass Net(nn.Module): pass\nm = Net()\nuse(m)", "module"),
        ("import torch.nn as nn\nw = nn.Parameter(t)\nuse(w)", "parameter"),
        ("import torch\nw = torch.randn(3, requires_grad=True)\nuse(w)", "leaf"),
        ("import torch\nw = torch.randn(3).requires_grad_()\nuse(w)", "leaf"),
        ("import torch\nw = torch.randn(3, requires_grad=True).cuda()\nuse(w)", "tensor"),
        ("import torch\nw = torch.randn(3)\nuse(w)", "tensor"),
        ("import torch\ndef f(o: torch.optim.Optimizer):\n    use(o)", "optimizer"),
        ("import torch\nfor p in model.parameters():\n    use(p)", "parameter"),
        ("import torch\nx = 3\nuse(x)", None),
        # a name is only a hint when nothing else is known
        ("import torch\nuse(optimizer)", "optimizer"),
        ("import torch\noptimizer = make_thing()\nuse(optimizer)", "optimizer"),
        ("import torch\nfrom torch.utils.data import DataLoader\noptimizer = DataLoader(ds)\nuse(optimizer)", "loader"),
    ],
)
def test_value_kinds(src, expected):
    model = model_of(src)
    use = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use"][-1]
    assert model.kind_of(use.args[0].value) == expected


def test_self_attribute_kinds_come_from_the_class():
    model = model_of(
        """
        import torch
        class T:
            def __init__(self, model):
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
                self.sampler = torch.utils.data.DistributedSampler(ds)
            def step(self):
                use(self.opt, self.sampler)
        """
    )
    use = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use"][0]
    assert [model.kind_of(a.value) for a in use.args] == ["optimizer", "sampler"]


@pytest.mark.parametrize(
    ("src", "inside"),
    [
        ("import torch\nwith torch.no_grad():\n    w.add_(1)", True),
        ("import torch\nwith torch.inference_mode():\n    w.add_(1)", True),
        ("import torch\nwith torch.autograd.grad_mode.no_grad():\n    w.add_(1)", True),
        ("import torch\nwith torch.set_grad_enabled(False):\n    w.add_(1)", True),
        ("import torch\nwith torch.set_grad_enabled(True):\n    w.add_(1)", False),
        ("import torch\n@torch.no_grad()\ndef f():\n    w.add_(1)", True),
        ("import torch\n@torch.no_grad\ndef f():\n    w.add_(1)", True),
        ("import torch\nwith torch.no_grad():\n    with torch.enable_grad():\n        w.add_(1)", False),
        ("import torch\nwith torch.no_grad():\n    def f():\n        w.add_(1)", False),
        ("from torch import no_grad as ng\nwith ng():\n    w.add_(1)", True),
        ("import torch\nw.add_(1)", False),
    ],
)
def test_in_no_grad(src, inside):
    model = model_of(src)
    call = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "add_"][0]
    assert model.in_no_grad(call) is inside


LOOPS = """
import torch
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):                 # epoch loop
    for x, y in train_loader:          # step loop
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    for x, y in val_loader:            # evaluation loop
        acc = (model(x).argmax(1) == y).float().mean()
"""


def test_training_loop_classification():
    model = model_of(LOOPS)
    facts = model.training
    epoch, train, val = model.nodes(cst.For)
    assert facts.is_training_loop(epoch) and not facts.is_step_loop(epoch) and facts.is_epoch_loop(epoch)
    assert facts.is_training_loop(train) and facts.is_step_loop(train) and not facts.is_epoch_loop(train)
    assert not facts.is_training_loop(val)


def test_events_in_statement_order():
    model = model_of(LOOPS)
    facts = model.training
    train = model.nodes(cst.For)[1]
    assert [(e.kind, e.key) for e in facts.region_events(train)] == [
        (CLEAR, "opt"), (BACKWARD, None), (STEP, "opt")]


def test_scheduler_and_env_steps_are_not_optimizer_steps():
    model = model_of(
        """
        import torch
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        for i in range(10):
            obs, r, done, info = env.step(action)
            sched.step()
        """
    )
    assert model.training.events == []
