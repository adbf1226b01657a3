from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import ERROR, Invalid, Rule, Valid
from lint_rules.analysis.cross_file import ProjectProvenance
from lint_rules.analysis.provenance import LOGITS, SIGMOID, SOFTMAX, LossSinks

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_NLL_FUNCTIONS = frozenset({"torch.nn.functional.nll_loss"})
_NLL_CLASSES = frozenset({"torch.nn.NLLLoss"})


class NllLossWithoutLogSoftmax(Rule):
    """
    ## What it does
    Flags `F.nll_loss(input, ...)` and calls of an `nn.NLLLoss()` whose input is
    provably not log-probabilities: the output of `softmax` or `sigmoid`, or the
    raw output of a linear layer (`nn.Linear`, an `nn.Sequential` ending in one,
    or a module in the same file whose `forward` returns one). The input is
    followed through variables, `.view()`-like methods and indexing, and a model
    to its construction in the same file.

    ## Why is this bad?
    `nll_loss` does not take a log: it returns `-input[target]` and trusts the
    input to be log-probabilities. Given probabilities, the loss is bounded in
    [-1, 0] and its gradient ignores how wrong the other classes are. Given raw
    logits, the loss is unbounded below: the model lowers it by inflating the
    target logit forever, the loss goes to -inf and the accuracy never improves.
    Nothing raises in either case.

    ## Example
    ```python
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = F.nll_loss(model(x), y)
    ```

    Use instead:
    ```python
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)  # or F.cross_entropy(model(x), y)
    ```

    ## Known problems
    The rule stays quiet unless the source is certain: a model passed in as an
    argument (unless annotated with its class), built in an installed package,
    or returning a tuple, is not followed, so such bugs are missed. Models
    defined in the project's other files are followed. A
    module's output counts as raw logits only when its `forward` returns the
    result of a linear layer on every path.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.nll_loss.html
    """

    CODE = "TRN504"
    REQUIRES = ("nll_loss", "NLLLoss")
    NAME = "nll-loss-without-log-softmax"
    MESSAGE = "nll_loss is given values that are not log-probabilities: it computes a meaningless loss"
    FIX_TITLE = "Apply log_softmax before nll_loss, or use cross_entropy on the logits"
    SEVERITY = ERROR

    VALID = [
        Valid(
            """
            # mnist-style: the model's forward returns log_softmax
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc1 = nn.Linear(784, 128)
                    self.fc2 = nn.Linear(128, 10)

                def forward(self, x):
                    x = F.relu(self.fc1(x))
                    x = self.fc2(x)
                    output = F.log_softmax(x, dim=1)
                    return output

            model = Net().to(device)
            for data, target in loader:
                output = model(data)
                loss = F.nll_loss(output, target)
            """
        ),
        Valid(
            """
            # nn.LogSoftmax as the last layer, and log_softmax applied in the loop
            import torch
            from torch import nn
            model = nn.Sequential(nn.Linear(10, 5), nn.LogSoftmax(dim=1))
            head = nn.Linear(10, 5)
            criterion = nn.NLLLoss()
            loss = criterion(model(x), y)
            out = head(x)
            out = torch.log_softmax(out, dim=-1)
            loss2 = criterion(out.view(-1, 5), y)
            """
        ),
        Valid(
            """
            # the source is unknown: a model passed in, a criterion passed in
            import torch.nn.functional as F
            def train(model, criterion, x, y):
                output = model(x)
                return F.nll_loss(output, y) + criterion(output, y)
            """
        ),
        Valid(
            """
            # a forward that returns logits on one path and log-probs on another
            import torch.nn.functional as F
            from torch import nn

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 3)

                def forward(self, x, log_probs=True):
                    if log_probs:
                        return F.log_softmax(self.fc(x), dim=-1)
                    return self.fc(x)

            head = Head()
            loss = F.nll_loss(head(x), y)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch.nn.functional as F
            probs = F.softmax(model(x), dim=1)
            loss = F.nll_loss(probs, y)  # BUG
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn
            model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
            criterion = nn.NLLLoss()
            for x, y in loader:
                loss = criterion(model(x), y)  # BUG
                loss.backward()
            """
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body = nn.Linear(784, 128)
                    self.out = nn.Linear(128, 10)

                def forward(self, x):
                    h = F.relu(self.body(x))
                    return self.out(h)

                def loss(self, x, y):
                    return F.nll_loss(self.out(F.relu(self.body(x))), y)  # BUG

            def evaluate(net: Net, x, y):
                logits = net(x)
                return F.nll_loss(logits, y, reduction="sum")  # BUG
            """
        ),
        Invalid(
            """
            import torch
            from torch.nn import NLLLoss
            loss_fn = NLLLoss()
            loss = loss_fn(torch.sigmoid(scores), labels)  # BUG
            """
        ),
    ]

    # forward()'s return statements are ordered, to follow the names they return.
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._sinks = LossSinks(model, _NLL_FUNCTIONS, _NLL_CLASSES)
        self._sinks.provenance = ProjectProvenance(model)  # follows classes imported from other files

    def visit_Call(self, node: cst.Call) -> None:
        kind = self._sinks.input_kind(node)
        if kind in (SOFTMAX, SIGMOID):
            self.report(node, f"nll_loss is given {kind} probabilities, not log-probabilities: "
                              f"the loss is bounded and its gradients are wrong")
        elif kind == LOGITS:
            self.report(node, "nll_loss is given raw logits, not log-probabilities: the loss is "
                              "unbounded below and the model never learns the classes")
