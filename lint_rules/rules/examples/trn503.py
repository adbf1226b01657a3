"""The examples of TRN503 (LogOfSoftmax): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import SAFE, Invalid, Valid

VALID = [
    Valid(
        """
        import torch.nn.functional as F
        log_probs = F.log_softmax(logits, dim=-1)
        entropy = -(log_probs.exp() * log_probs).sum(-1)
        """
    ),
    Valid(
        """
        # an epsilon or a clamp keeps the log finite
        import torch
        probs = torch.softmax(logits, dim=1)
        a = torch.log(probs + 1e-8)
        b = probs.clamp(min=1e-8).log()
        """
    ),
    Valid(
        """
        # log of something else, and math.log of a probability
        import math
        import torch
        probs = torch.softmax(logits, dim=1)
        probs = probs.mean(0)
        x = torch.log(torch.sigmoid(z) + 1)
        y = math.log(p)
        z = torch.log(probs)
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        loss = F.nll_loss(torch.log(F.softmax(logits, dim=1)), y)  # BUG
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        loss = F.nll_loss(F.log_softmax(logits, dim=1), y)  # BUG
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        import torch
        scores = torch.log(torch.softmax(att.float(), -1, dtype=torch.float32))  # BUG
        entropy = logits.softmax(dim=-1).log()  # BUG
        """,
        fixed="""
        import torch
        scores = torch.log_softmax(att.float(), -1, dtype=torch.float32)  # BUG
        entropy = logits.log_softmax(dim=-1)  # BUG
        """,
        applicability=SAFE,
    ),
    Invalid(
        """
        import torch
        p = logits.softmax(-1)
        entropy = -(p * p.log()).sum(-1)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        from torch import nn
        model = nn.Sequential(nn.Linear(16, 4), nn.Softmax(dim=1))
        for x, y in loader:
            out = model(x)
            log_probs = torch.log(out[:, :3])  # BUG
        """
    ),
    Invalid(
        """
        from torch import log, softmax
        scores = log(softmax(att, dim=-1))  # BUG
        """
    ),
]
