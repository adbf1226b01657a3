from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import WARNING, Rule
from lint_rules.analysis.cross_file import ProjectProvenance
from lint_rules.analysis.provenance import SIGMOID, LossSinks
from lint_rules.rules.examples import trn502 as examples

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_BCE_FUNCTIONS = frozenset({"torch.nn.functional.binary_cross_entropy"})
_BCE_CLASSES = frozenset({"torch.nn.BCELoss"})


_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
                       "torch.amp.autocast_mode.autocast"})


class SigmoidBeforeBceLoss(Rule):
    """
    ## What it does
    Flags `F.binary_cross_entropy(input, ...)` and calls of an `nn.BCELoss()` whose
    input is the output of a sigmoid: a `torch.sigmoid(...)`/`x.sigmoid()` call, a
    variable assigned one, or a model whose last layer is `nn.Sigmoid`
    (`nn.Sequential(..., nn.Sigmoid())`, or a module whose `forward` returns a
    sigmoid, defined in this file or imported from another file of the project).

    ## Why is this bad?
    A separate sigmoid followed by `log` is numerically fragile: once a logit
    passes about ±17 in float32 (±9 in float16) the sigmoid rounds to exactly 0 or
    1, `BCELoss` clamps the log at -100, and the gradient of a confidently wrong
    prediction vanishes, so those samples stop being learned. Under
    `torch.autocast` the run does not even start: `binary_cross_entropy` raises
    "unsafe to autocast". `BCEWithLogitsLoss` fuses the two with the log-sum-exp
    trick and has neither problem.

    ## Example
    ```python
    disc = nn.Sequential(nn.Linear(64, 1), nn.Sigmoid())
    criterion = nn.BCELoss()
    loss = criterion(disc(x), labels)
    ```

    Use instead:
    ```python
    disc = nn.Sequential(nn.Linear(64, 1))
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(disc(x), labels)
    ```

    Confidence: under `torch.autocast` binary cross-entropy raises, so a sigmoid
    fed to it there is *certain* and reported by default. Elsewhere the pair works,
    only with less numerical headroom: *possible* (`--preview`); on code nobody
    here had read, none of the sampled ones was worth a change.

    ## Known problems
    Many textbook examples (DCGAN, siamese networks) pair `nn.Sigmoid` with
    `nn.BCELoss` and train fine in float32 at moderate confidence; the finding is a
    warning for that reason. Models are followed into the project's other files,
    not into installed packages; models passed in as arguments without a type
    annotation naming their class, criteria passed in as arguments or imported
    from another file, and tuple outputs of classes in other files are not
    resolved (one element of a tuple that a class of this file returns is, as is a
    loss helper of this file that hands its parameter to the loss). `BCELoss` on probabilities that do not come from a
    sigmoid (a softmax column, a product of probabilities) is correct and not
    flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html
    - https://pytorch.org/docs/stable/generated/torch.nn.BCELoss.html
    - https://pytorch.org/docs/stable/amp.html#prefer-binary-cross-entropy-with-logits-over-binary-cross-entropy
    """

    CODE = "TRN502"
    REQUIRES = ("binary_cross_entropy", "BCELoss")
    NAME = "sigmoid-before-bce-loss"
    MESSAGE = ("Binary cross-entropy is given sigmoid outputs: saturated predictions lose their gradient, "
               "and it raises under autocast")
    FIX_TITLE = "Drop the sigmoid and use BCEWithLogitsLoss / binary_cross_entropy_with_logits"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    # forward()'s return statements are ordered, to follow the names they return.
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._sinks = LossSinks(model, _BCE_FUNCTIONS, _BCE_CLASSES)
        self._sinks.provenance = ProjectProvenance(model)  # follows classes imported from other files

    def visit_Call(self, node: cst.Call) -> None:
        if self._sinks.input_kind(node) == SIGMOID:
            # Certain under autocast: binary_cross_entropy refuses to run there (a RuntimeError).
            self.report(node, certain=self._under_autocast(node))

    def _under_autocast(self, node: cst.CSTNode) -> bool:
        model = self.model
        for a in model.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(a, cst.With) and any(
                    isinstance(item.item, cst.Call) and model.qualified_name(item.item.func) in _AUTOCAST
                    for item in a.items):
                return True
        return False
