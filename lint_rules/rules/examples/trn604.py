"""The examples of TRN604 (FunctionalDropoutIgnoresMode): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
                self.drop = nn.Dropout(0.5)

            def forward(self, x):
                x = F.dropout(x, p=0.1, training=self.training)
                x = F.dropout(x, 0.1, self.training)
                return self.drop(self.fc(x))
        """
    ),
    Valid(
        """
        # the mode decides the probability, or guards the call
        import torch
        from torch import nn
        from torch.nn import functional as F
        class Attn(nn.Module):
            def forward(self, q, k, v):
                w = torch.softmax(q @ k.transpose(-2, -1), -1)
                w = F.dropout(w, p=self.p if self.training else 0.0)
                if self.training:
                    v = F.dropout(v, 0.1)
                return w @ v

        class Fused(nn.Module):
            def forward(self, q, k, v):
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0)
                p = self.p if self.training else 0.0
                y = y + F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
                return y + F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """
    ),
    Valid(
        """
        # a free function that takes the mode, and deliberate Monte Carlo dropout
        import torch.nn as nn
        import torch.nn.functional as F
        def head(x, training):
            return F.dropout(x, 0.2, training=training)
        class MCDropout(nn.Module):
            def forward(self, x):
                return F.dropout(x, 0.5, training=True)
        """
    ),
    Valid(
        """
        # dropout modules built once and registered (also lazily), or put in eval mode
        import torch.nn as nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 2)
                self.drop = nn.Dropout(0.3)

            def forward(self, h):
                if not hasattr(self, "extra"):
                    self.extra = nn.Dropout(0.1)
                h = self.extra(self.drop(h))
                if self.training:
                    h = nn.Dropout(0.2)(h)
                return self.fc(nn.Dropout(0.1).eval()(h))
        """
    ),
    Valid(
        """
        # a dropout layer of its own that returns early in eval mode
        import torch.nn as nn
        import torch.nn.functional as F
        class SpatialDropout(nn.Module):
            def forward(self, x):
                if not self.training or self.p == 0:
                    return x
                return F.dropout2d(x.unsqueeze(-1), self.p).squeeze(-1)
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch.nn as nn
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 2)

            def forward(self, h):
                h = nn.Dropout(0.3)(h)  # BUG
                drop = nn.Dropout2d(p=0.1)
                return self.fc(drop(h))  # BUG
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(8, 8)
                self.fc2 = nn.Linear(8, 2)

            def forward(self, x):
                x = F.dropout(F.relu(self.fc1(x)), p=0.5)  # BUG
                return self.fc2(x)
        """
    ),
    Invalid(
        """
        import torch
        from torch.nn.functional import dropout2d
        class Block(torch.nn.Conv2d):
            def forward(self, x):
                return dropout2d(super().forward(x), 0.2)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def _attend(self, q, k, v):
                w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
                w = torch.nn.functional.dropout(w, self.p)  # BUG
                return w @ v

            def forward(self, x):
                return self._attend(x, x, x)

        class Fused(nn.Module):
            def forward(self, q, k, v):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=self.p)  # BUG
        """
    ),
]
