from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import WARNING, Invalid, Rule, Valid
from lint_rules.analysis.provenance import SOFTMAX, Provenance

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel


class LogOfSoftmax(Rule):
    """
    ## What it does
    Flags `torch.log(p)` and `p.log()` where `p` is the output of a softmax: a
    `softmax(...)` call, a variable assigned one, or a model whose last layer is
    `nn.Softmax`.

    ## Why is this bad?
    Softmax probabilities of unlikely classes underflow to exactly 0 (below about
    1e-38 in float32, 6e-8 in float16), and `log(0)` is `-inf`. The first batch
    with a confident prediction turns the loss, and then every weight, into NaN;
    long before that, log-probabilities of rare classes lose all precision.
    `log_softmax` computes the same values as `x - logsumexp(x)` and never
    underflows.

    ## Example
    ```python
    probs = F.softmax(logits, dim=-1)
    loss = F.nll_loss(torch.log(probs), y)
    entropy = -(probs * probs.log()).sum(-1)
    ```

    Use instead:
    ```python
    log_probs = F.log_softmax(logits, dim=-1)
    loss = F.nll_loss(log_probs, y)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    ```

    ## Known problems
    `torch.log(probs + eps)` and `torch.log(probs.clamp(min=eps))` are not
    flagged: the epsilon avoids the NaN (at the price of a small bias). The log
    of a sigmoid (use `F.logsigmoid`) is not covered. Softmax values that reach
    the log through another module, a function argument or a tuple are missed.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html
    - https://pytorch.org/docs/stable/generated/torch.nn.LogSoftmax.html
    """

    CODE = "TRN503"
    NAME = "log-of-softmax"
    MESSAGE = "log() of softmax probabilities underflows to -inf and turns the loss into NaN"
    FIX_TITLE = "Use log_softmax instead of log(softmax(...))"
    SEVERITY = WARNING

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
            """
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

    # forward()'s return statements are ordered, to follow the names they return.
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._provenance = Provenance(model)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "log":
            q = self.model.qualified_name(func)
            if q is None and not node.args:
                value = func.value  # p.log()
            elif q == "torch.log" and node.args:
                value = node.args[0].value
            else:
                return
        elif isinstance(func, cst.Name) and node.args and self.model.qualified_name(func) == "torch.log":
            value = node.args[0].value  # from torch import log
        else:
            return
        if self._provenance.of_value(value, node) == SOFTMAX:
            self.report(node)
