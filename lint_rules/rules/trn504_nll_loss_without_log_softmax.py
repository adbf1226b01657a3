from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import ERROR, Rule
from lint_rules.analysis.cross_file import ProjectProvenance
from lint_rules.analysis.provenance import LOGITS, SIGMOID, SOFTMAX, LossSinks
from lint_rules.rules.examples import trn504 as examples

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
    or returning a tuple from another file, is not followed, so such bugs are
    missed (an element of a tuple that a class of this file returns is followed). Models
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

    VALID = examples.VALID
    INVALID = examples.INVALID

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
