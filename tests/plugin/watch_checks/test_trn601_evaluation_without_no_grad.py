"""TRN601 at run time (pytest_torchcheck/watch/checks/trn601_evaluation_without_no_grad.py): a trained model
run repeatedly with autograd recording and no backward through its output is reported at the call; training
steps, skipped batches, summed losses, target networks and checkpointing are not."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

HEAD = """\
import copy
import torch
import torch.nn.functional as F
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
"""

BUGGY = HEAD + """\
def evaluate(m):
    m.eval()
    correct = 0
    for _ in range(2):
        correct += (m(x).argmax(dim=1) == y).sum().item()  # <-
    m.train()
    return correct

for _ in range(3):
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    print(evaluate(model))
"""


def test_forwards_never_backpropagated_are_reported_at_the_call(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN601"])
    assert watched.lines == [("TRN601", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN601")
    assert "Sequential ran with autograd recording 4 times here" in message and "torch.no_grad()" in message
    assert watched.errors == [] and watched.code == 0


def test_a_model_gone_with_its_last_evaluation_graphs_is_still_reported(tmp_path) -> None:
    # the last evaluation's graph lives in main()'s locals with the model: both die when main() returns,
    # after the last step, so the forwards are counted when the model is already gone
    source = """\
import torch
import torch.nn.functional as F

def evaluate(model, x):
    total = 0
    for _ in range(2):
        total += model(x).sum()  # <-
    return total

def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        last = evaluate(model, x)
    print(float(last))

main()
"""
    watched = watch_program(tmp_path, source, ["TRN601"])
    assert watched.lines == [("TRN601", line_of(source, "# <-"))]
    [message] = watched.messages("TRN601")
    assert message.startswith("Linear ran with autograd recording 4 times here")
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_is_clean(tmp_path) -> None:
    source = BUGGY.replace("    for _ in range(2):\n        correct", "    with torch.no_grad():\n      for _ in range(2):\n        correct")
    watched = watch_program(tmp_path, source, ["TRN601"])
    assert watched.findings == [] and watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = HEAD + """\
from torch.utils.checkpoint import checkpoint
target = copy.deepcopy(model)  # a target network: never stepped
probe = model(x)  # one probing forward
del probe
for i in range(8):
    opt.zero_grad()
    out = model(x)
    if i < 3:
        continue  # skipped batches (a NaN loss, say): this line trains otherwise
    losses = [F.cross_entropy(model(x + k), y) for k in range(2)]  # summed, then one backward
    q = target(x).max(dim=1).values.detach()
    ck = checkpoint(model, x, use_reentrant=False)  # recomputed during the backward
    (F.cross_entropy(out, y) + sum(losses) + ck.sum()).backward()
    opt.step()
class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 3), torch.nn.Linear(4, 1)

    def forward(self, x):
        return {"logits": self.a(x), "aux": self.b(x)}

heads = TwoHeads()
heads_opt = torch.optim.SGD(heads.parameters(), lr=0.1)
for _ in range(4):
    heads_opt.zero_grad()
    F.cross_entropy(heads(x)["logits"], y).backward()  # only one output is backpropagated
    heads_opt.step()
frozen = torch.nn.Linear(4, 3)
for _ in range(4):
    frozen(x).sum()  # no optimizer trains it
"""
    watched = watch_program(tmp_path, source, ["TRN601"])
    assert watched.findings == [] and watched.errors == [] and watched.code == 0
