"""TRN602 at run time (pytest_torchcheck/watch/checks/trn602_evaluation_without_eval_mode.py): a trained model
evaluated under no_grad in training mode is reported at the call; EMA copies, recalibration passes, frozen
batch norm and target networks are not."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import copy
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                            torch.nn.Dropout(0.2), torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))

def train_step():
    model.train()
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
"""

BUGGY = HEAD + """\
def evaluate(m):
    with torch.no_grad():
        return (m(x).argmax(dim=1) == y).float().mean()  # <-

print(evaluate(model))
for _ in range(3):
    train_step()
    print(evaluate(model))
"""


def test_a_trained_model_evaluated_in_training_mode_is_reported_at_the_call(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN602"])
    assert watched.lines == [("TRN602", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN602")
    assert "Sequential ran without autograd but in training mode" in message
    assert "1 BatchNorm1d, 1 Dropout" in message and "model.eval()" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace("    with torch.no_grad():", "    m.eval()\n    with torch.no_grad():"),
                            ["TRN602"])
    assert watched.findings == [] and watched.errors == []


def test_inference_mode_is_reported_too(tmp_path) -> None:
    source = BUGGY.replace("torch.no_grad()", "torch.inference_mode()")
    watched = watch_program(tmp_path, source, ["TRN602"])
    assert watched.lines == [("TRN602", line_of(source, "# <-"))]


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
ema = copy.deepcopy(model)  # never stepped by an optimizer
target = copy.deepcopy(model)
frozen = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
frozen_opt = torch.optim.SGD(frozen.parameters(), lr=0.1)
for _ in range(3):
    train_step()
    with torch.no_grad():
        ema_out = ema(x).argmax(dim=1)  # an EMA / teacher copy
        q_next = target(x).max(dim=1).values  # a target network in a training step
        model(x)  # a batch-norm recalibration pass: the result is thrown away
    frozen.train()
    frozen[1].eval()  # frozen batch norm while fine-tuning
    with torch.no_grad():
        frozen_out = frozen(x).argmax(dim=1)
    frozen_opt.zero_grad()
    frozen(x).sum().backward()
    frozen_opt.step()
for _ in range(2):  # pseudo-labels from the model itself, inside its training step
    opt.zero_grad()
    with torch.no_grad():
        pseudo = model(x).argmax(dim=1)
    F.cross_entropy(model(x), pseudo).backward()
    opt.step()
# a cumulative recalibration, as torch.optim.swa_utils.update_bn does
model[1].momentum = None
with torch.no_grad():
    stats = model(x).mean()
model[1].momentum = 0.1
torch.optim.swa_utils.update_bn([x], model)  # torch's own code runs the model
"""
    watched = watch_program(tmp_path, source, ["TRN602"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0


FUNCTIONAL = """\
import torch
import torch.nn.functional as F
torch.manual_seed(0)

class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.b(F.dropout(F.relu(self.a(x)), p=0.5, training=self.training))  # as nn.Dropout would


class MonteCarloScorer(Scorer):
    def forward(self, x):
        return self.b(F.dropout(F.relu(self.a(x)), 0.5, True))  # on whatever the mode

def run(kind):
    model = kind()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for _ in range(3):
        model.train()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        with torch.no_grad():
            print((model(x).argmax(1) == y).float().mean())  # <-
"""


def test_a_functional_dropout_that_follows_the_mode_is_reported(tmp_path) -> None:
    # a model with no nn.Dropout layer: F.dropout(..., training=self.training) in its forward (OGB's style)
    source = FUNCTIONAL + 'run(Scorer)\n'
    watched = watch_program(tmp_path, source, ["TRN602"])
    assert watched.lines == [("TRN602", line_of(source, "# <-"))]
    [message] = watched.messages("TRN602")
    assert "Scorer ran without autograd but in training mode (1 call here)" in message
    assert "functional dropout (training=self.training)" in message
    assert watched.errors == [] and watched.code == 0


def test_a_functional_dropout_on_whatever_the_mode_is_not_reported(tmp_path) -> None:
    # training=True written out: eval() would not turn it off, so evaluating in eval mode changes nothing
    watched = watch_program(tmp_path, FUNCTIONAL + 'run(MonteCarloScorer)\n', ["TRN602"])
    assert watched.findings == [] and watched.errors == []
