"""The examples of TRN501 (SoftmaxBeforeCrossEntropy): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch.nn.functional as F
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        probs = F.softmax(logits, dim=1)
        """
    ),
    Valid(
        """
        # distillation: softmax of the teacher is the target, not the input
        import torch
        import torch.nn.functional as F
        student = model(x)
        with torch.no_grad():
            soft = F.softmax(teacher(x) / T, dim=1)
        loss = F.cross_entropy(student, soft)
        """
    ),
    Valid(
        """
        # the model's last layer is linear; the softmax is only for reporting
        from torch import nn
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
        criterion = nn.CrossEntropyLoss()
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            out = out.softmax(dim=1)
            top1 = out.argmax(1)
        """
    ),
    Valid(
        """
        # softmax on one branch only, and a scipy softmax
        import torch.nn.functional as F
        from scipy.special import softmax
        out = model(x)
        if use_probs:
            out = F.softmax(out, dim=-1)
        loss = F.cross_entropy(out, y)
        loss2 = F.cross_entropy(softmax(z), y)
        """
    ),
    Valid(
        """
        # a local module whose forward returns logits
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 3)

            def forward(self, x):
                return self.fc(x)

        net = Net()
        criterion = nn.CrossEntropyLoss()
        loss = criterion(net(x), y)
        """
    ),
    Valid(
        """
        # the same shapes on logits; exp() of a log that is not log_softmax; a criterion argument
        import torch
        import torch.nn as nn
        class MatchingLoss(nn.Module):
            def __init__(self, criterion=nn.CrossEntropyLoss(), other=None):
                super().__init__()
                self.criterion = criterion
                self.other = other

            def forward(self, scores, target):
                loss = self.criterion(scores, target)
                loss = loss + self.criterion(torch.exp(torch.log(scores.clamp(min=1e-6))), target)
                for row in scores:
                    loss = loss + self.criterion(row, target[:1])
                for i, row in enumerate(torch.softmax(scores, -1)):
                    print(i, row.max())
                return loss + self.other(torch.softmax(scores, -1), target)
        """
    ),
    Valid(
        """
        # near misses: the tuple element fed to the loss helpers is the logits (one helper changes
        # its parameter before the loss); a forward whose returns differ in shape
        import torch.nn as nn
        import torch.nn.functional as F

        class Discriminator(nn.Module):
            def __init__(self, n_classes):
                super().__init__()
                self.adv = nn.Sequential(nn.Linear(128, 1), nn.Sigmoid())
                self.aux = nn.Linear(128, n_classes)
                self.probs = nn.Softmax(dim=1)

            def forward(self, h):
                logits = self.aux(h)
                return self.adv(h), logits, self.probs(logits)

        class Other(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Sequential(nn.Linear(128, 4), nn.Softmax(dim=1))

            def forward(self, h, both=False):
                if both:
                    return self.head(h), h
                return self.head(h)

        class ACGAN:
            def __init__(self, n_classes):
                self.discriminator = Discriminator(n_classes)
                self.other = Other()

            def auxiliary_loss(self, y_hat, y):
                return F.cross_entropy(y_hat, y)

            def tempered_loss(self, y_hat, y):
                y_hat = y_hat / 2.0
                return F.cross_entropy(y_hat, y)

            def step(self, h, labels):
                validity, logits, probs = self.discriminator(h)
                loss = self.auxiliary_loss(logits, labels)
                loss = loss + self.tempered_loss(logits, labels)
                first, rest = self.other(h, both=True)
                return loss + self.auxiliary_loss(first, labels)
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        for x, y in loader:
            probs = F.softmax(model(x), dim=1)
            loss = F.cross_entropy(probs, y)  # BUG
            loss.backward()
        """
    ),
    Invalid(
        """
        from torch import nn
        model = nn.Sequential(nn.Linear(784, 10), nn.Softmax(dim=1)).to("cuda")
        criterion = nn.CrossEntropyLoss()
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        from torch.nn import functional
        loss = functional.cross_entropy(torch.softmax(logits, -1).view(-1, 10), y)  # BUG
        loss = functional.cross_entropy(input=logits.softmax(dim=-1), target=y)  # BUG
        loss = functional.cross_entropy(logits.log_softmax(dim=-1), y)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 4)

            def forward(self, x):
                return F.softmax(self.fc(x), dim=1)

        class Trainer:
            def __init__(self):
                self.model = Classifier()
                self.criterion = nn.CrossEntropyLoss()

            def step(self, x, y):
                return self.criterion(self.model(x), y)  # BUG

        def compute_loss(model: Classifier, x, y):
            return nn.CrossEntropyLoss()(model(x), y)  # BUG
        """
    ),
    Invalid(
        """
        # a criterion from a parameter default, exp() of log_softmax, and rows of probabilities
        import torch
        import torch.nn as nn
        class MatchingLoss(nn.Module):
            def __init__(self, criterion=nn.CrossEntropyLoss()):
                super().__init__()
                self.criterion = criterion

            def forward(self, scores, target):
                loss = self.criterion(torch.softmax(scores, -1), target)  # BUG
                probs = torch.log_softmax(scores, dim=1).exp()
                loss = loss + self.criterion(probs, target)  # BUG
                for row in torch.softmax(scores, -1):
                    loss = loss + self.criterion(row, target[:1])  # BUG
                outputs = torch.softmax(scores, -1)
                for out in outputs:
                    loss = loss + self.criterion(out, target[:1])  # BUG
                return loss
        """
    ),
    Invalid(
        """
        # a discriminator whose forward returns (validity, class probabilities), unpacked, and a
        # loss helper method that hands its parameter to cross_entropy
        import torch.nn as nn
        import torch.nn.functional as F

        class Discriminator(nn.Module):
            def __init__(self, n_classes):
                super().__init__()
                self.adv = nn.Sequential(nn.Linear(128, 1), nn.Sigmoid())
                self.aux = nn.Sequential(nn.Linear(128, n_classes), nn.Softmax(dim=1))

            def forward(self, h):
                return self.adv(h), self.aux(h)

        class ACGAN:
            def __init__(self, n_classes):
                self.discriminator = Discriminator(n_classes)

            def auxiliary_loss(self, y_hat, y):
                return F.cross_entropy(y_hat, y)

            def step(self, h, labels):
                validity, pred_label = self.discriminator(h)
                return self.auxiliary_loss(pred_label, labels)  # BUG
        """
    ),
]
