from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.cross_file import ProjectProvenance
from lint_rules.analysis.provenance import LOG_SOFTMAX, LossSinks, SOFTMAX
from lint_rules.rule import ERROR, WARNING, Rule
from lint_rules.rules.examples import trn501 as examples

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_CE_FUNCTIONS = frozenset({"torch.nn.functional.cross_entropy"})
_CE_CLASSES = frozenset({"torch.nn.CrossEntropyLoss"})


class SoftmaxBeforeCrossEntropy(Rule):
    """
    ## What it does
    Flags `F.cross_entropy(input, ...)` and calls of an `nn.CrossEntropyLoss()`
    whose input is the output of `softmax`: a `softmax(...)` call, a variable
    assigned one, or a model whose last layer is `nn.Softmax` (`nn.Sequential(...,
    nn.Softmax(dim=1))`, or a module whose `forward` returns a softmax, defined in
    this file or imported from another file of the project), also as
    `exp(log_softmax(x))`, row by row (`for row in torch.softmax(scores, -1)`), as
    one element of a module's tuple output (`validity, label = disc(img)` where
    `forward` returns `self.adv(h), self.aux(h)` and `aux` ends in `nn.Softmax`),
    and through a loss helper of this file that hands its parameter to
    cross-entropy (`self.auxiliary_loss(label, y)` with `return F.cross_entropy(y_hat, y)`).
    An input that went through `log_softmax` is reported as a warning:
    it is redundant rather than wrong.

    ## Why is this bad?
    Cross-entropy applies `log_softmax` to its input itself: it expects raw
    logits. Fed probabilities, it computes the softmax of a softmax: every input
    lies in [0, 1], so the predicted distribution can never be confident, the loss
    stays stuck near `log(num_classes)` and the gradients shrink by orders of
    magnitude. The model learns very slowly or not at all, and nothing raises.
    (`log_softmax` is idempotent, so a `log_softmax` input only costs an extra
    pass; it usually means the author meant `F.nll_loss`.)

    ## Example
    ```python
    model = nn.Sequential(nn.Linear(784, 10), nn.Softmax(dim=1))
    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)
    ```

    Use instead:
    ```python
    model = nn.Sequential(nn.Linear(784, 10))
    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)
    probs = model(x).softmax(dim=1)  # where probabilities are needed
    ```

    ## Known problems
    Models are followed into the project's other files (classes, module-level
    instances and functions imported from them), not into installed packages. A
    model passed in as an argument without a type annotation naming its class, a
    criterion passed in as an argument (unless its default constructs one:
    `criterion=nn.CrossEntropyLoss()`, whose caller may pass another loss) or
    imported from another file, a tuple output of a class in another file, and a
    loss helper that changes its parameter or is more than one call away are not
    resolved, so such cases are missed. A variable that is a softmax on one branch
    only (`if use_probs: out = out.softmax(1)`) is not flagged. Softmax used as
    the *target* (soft labels, distillation) is fine and not flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.cross_entropy.html
    """

    CODE = "TRN501"
    REQUIRES = ("cross_entropy", "CrossEntropy")
    NAME = "softmax-before-cross-entropy"
    MESSAGE = ("Cross-entropy is given softmax probabilities: it applies log_softmax itself, "
               "so the loss is squashed and the model barely learns")
    FIX_TITLE = "Pass the raw logits to cross-entropy and drop the softmax"
    SEVERITY = ERROR

    VALID = examples.VALID
    INVALID = examples.INVALID

    # forward()'s return statements are ordered, to follow the names they return.
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._sinks = LossSinks(model, _CE_FUNCTIONS, _CE_CLASSES)
        self._sinks.provenance = ProjectProvenance(model)  # follows classes imported from other files

    def visit_Call(self, node: cst.Call) -> None:
        kind = self._sinks.input_kind(node)
        if kind == SOFTMAX:
            self.report(node)
        elif kind == LOG_SOFTMAX:
            self.report(node, "Cross-entropy is given log_softmax output: it applies log_softmax itself, "
                              "so this one is redundant (did you mean nll_loss?)", severity=WARNING)
