"""The examples of TRN504 (NllLossWithoutLogSoftmax): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

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
