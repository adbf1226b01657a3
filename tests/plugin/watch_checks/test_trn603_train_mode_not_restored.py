"""TRN603 at run time (pytest_torchcheck/watch/checks/trn603_train_mode_not_restored.py): a model left in eval
mode by an evaluation and then trained is reported at the trained forward, naming the eval() call; frozen
batch norm and deliberate training in eval mode are not."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                            torch.nn.Dropout(0.2), torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))

def evaluate(m):
    m.eval()  # eval here
    with torch.no_grad():
        return (m(x).argmax(dim=1) == y).float().mean()
"""

BUGGY = HEAD + """\
for epoch in range(3):
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()  # <-
        opt.step()
    print(evaluate(model))
"""


def test_training_after_an_evaluation_left_eval_mode_is_reported_at_the_forward(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN603"])
    assert watched.lines == [("TRN603", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN603")
    assert f"train.py:{line_of(BUGGY, '# eval here')} (in evaluate())" in message
    assert "1 BatchNorm1d, 1 Dropout" in message and "model.train()" in message
    assert watched.errors == [] and watched.code == 0


def test_train_false_in_a_model_class_that_overrides_train_is_reported_too(tmp_path) -> None:
    source = BUGGY.replace("    m.eval()  # eval here", "    m.train(False)  # eval here").replace(
        "model = torch.nn.Sequential(", """class Net(torch.nn.Sequential):
    def train(self, mode=True):
        super().train(mode)
        self[1].eval()  # its batch norm stays frozen, as fine-tuning does
        return self

model = Net(""")
    watched = watch_program(tmp_path, source, ["TRN603"])
    assert watched.lines == [("TRN603", line_of(source, "# <-"))]
    [message] = watched.messages("TRN603")
    assert f"train.py:{line_of(source, '# eval here')} (in evaluate())" in message and "Net was trained" in message
    assert watched.errors == []


def test_its_fixed_twin_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace("    for _ in range(2):", "    model.train()\n    for _ in range(2):"),
                            ["TRN603"])
    assert watched.findings == [] and watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
def freeze_bn(m):
    m.train()
    m[1].eval()  # frozen batch norm while fine-tuning: the model itself trains in training mode

model.eval()  # deliberate: this program trains in eval mode, and says so where it trains
for epoch in range(2):
    print(evaluate(model))
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
for epoch in range(2):
    print(evaluate(model))
    freeze_bn(model)
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
plain = torch.nn.Linear(4, 3)  # no dropout, no batch norm: the mode changes nothing
plain_opt = torch.optim.SGD(plain.parameters(), lr=0.1)
for _ in range(2):
    evaluate(plain)
    plain_opt.zero_grad()
    plain(x).sum().backward()
    plain_opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN603"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
