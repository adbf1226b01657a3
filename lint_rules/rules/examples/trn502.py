"""The examples of TRN502 (SigmoidBeforeBceLoss): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch.nn.functional as F
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        preds = logits.sigmoid() > 0.5
        """
    ),
    Valid(
        """
        # BCELoss on probabilities that are not a sigmoid output
        import torch
        from torch import nn
        criterion = nn.BCELoss()
        p = torch.softmax(logits, dim=1)[:, 1]
        loss = criterion(p, y)
        """
    ),
    Valid(
        """
        # the model ends in a linear layer; the sigmoid is for reporting only
        from torch import nn
        net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            out = net(x)
            loss = criterion(out, y)
            out = out.sigmoid()
        """
    ),
    Valid(
        """
        # a sigmoid on another variable, and BCE on one whose source is unknown
        import torch
        import torch.nn.functional as F
        gate = torch.sigmoid(g)
        loss = F.binary_cross_entropy(recon, x)
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        probs = torch.sigmoid(model(x))
        loss = F.binary_cross_entropy(probs, y)  # BUG
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        netD = nn.Sequential(nn.Linear(64, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
        criterion = nn.BCELoss()
        for real, in loader:
            errD = criterion(netD(real).view(-1), ones)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn

        class Siamese(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(128, 1)
                self.sigmoid = nn.Sigmoid()

            def forward(self, a, b):
                out = self.fc(torch.abs(a - b))
                out = self.sigmoid(out)
                return out

        model = Siamese().to(device)
        criterion = nn.BCELoss()
        loss = criterion(model(a, b).squeeze(), target)  # BUG
        """
    ),
    Invalid(
        """
        from torch.nn.functional import binary_cross_entropy as bce
        loss = bce(logits.sigmoid(), y, reduction="sum")  # BUG
        """
    ),
]
