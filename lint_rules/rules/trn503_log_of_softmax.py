from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.rule import SAFE, WARNING, Replace, Rule, RuleFix
from lint_rules.analysis.cross_file import ProjectProvenance
from lint_rules.analysis.provenance import SOFTMAX
from lint_rules.analysis.spelling import spelling
from lint_rules.rules.examples import trn503 as examples

_SOFTMAX_FUNCTIONS = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
_NLL = frozenset({"torch.nn.functional.nll_loss", "torch.nll_loss"})
_NLL_CLASSES = frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss"})

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel


class LogOfSoftmax(Rule):
    """
    ## What it does
    Flags `torch.log(p)` and `p.log()` where `p` is the output of a softmax: a
    `softmax(...)` call, a variable assigned one, or a model whose last layer is
    `nn.Softmax`.

    Confidence: the log of softmax probabilities handed to a negative log-likelihood
    loss (`F.nll_loss(torch.log(p), y)`, also through a variable or an
    `nn.NLLLoss()` instance) is *certain*: that is what `log_softmax` exists for.
    Any other log of a softmax is *possible* (`--preview`): a hand-written loss
    over bounded scores (cosine similarities over a temperature), the probability
    of a sampled or arg-max class, the scores of a beam search or an initial state
    rarely meets an exact zero, and on unseen code none of those was worth a change.

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
    of a sigmoid (use `F.logsigmoid`) is not covered. Softmax values returned
    by a function or model of another project file are followed; those that
    reach the log through a function argument or a tuple are missed.

    ## Fix safety
    When the log is taken directly of a softmax call (`torch.log(F.softmax(x, dim=1))`,
    `x.softmax(-1).log()`), the fix calls the matching `log_softmax` with the same
    arguments (`dim`, `dtype` and the rest are kept): `F.log_softmax`,
    `torch.log_softmax`, `x.log_softmax`. It is safe: the values are the same
    log-probabilities, except that those that underflowed to `-inf` become finite.
    There is no fix when the softmax reaches the log through a variable (the
    probabilities may be used elsewhere), through a model's `nn.Softmax` layer, or
    when `log_softmax` cannot be named through the file's imports (`from torch import
    log, softmax`): a fix never adds an import.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html
    - https://pytorch.org/docs/stable/generated/torch.nn.LogSoftmax.html
    """

    CODE = "TRN503"
    REQUIRES = ("log",)
    NAME = "log-of-softmax"
    MESSAGE = "log() of softmax probabilities underflows to -inf and turns the loss into NaN"
    FIX_TITLE = "Use log_softmax instead of log(softmax(...))"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    # forward()'s return statements are ordered, to follow the names they return.
    NEEDS = (cst.Return,)

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._provenance = ProjectProvenance(model)

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
            self.report(node, fix=self._fix(node, value), certain=self._feeds_nll_loss(node))

    def _feeds_nll_loss(self, log_call: cst.Call) -> bool:
        """The log-probabilities go to a negative log-likelihood loss (`F.nll_loss(torch.log(p), y)`,
        also through a variable, or to an `nn.NLLLoss()` instance): the case `log_softmax` exists for.
        A log taken for something else (a hand-written loss over bounded scores, the probability of a
        sampled or arg-max class, a beam search's scores, an initial state) rarely meets a zero: possible."""
        model = self.model
        parent = model.parent(log_call)
        if isinstance(parent, cst.Arg):
            return self._is_nll(model.parent(parent))
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            return False
        name = parent.targets[0].target.value
        scope = model.enclosing_function(log_call) or model.module
        for call in model.within(cst.Call, scope):
            if self._is_nll(call) and any(isinstance(a.value, cst.Name) and a.value.value == name
                                          and any(b.node is parent for b in model.bindings_of(a.value) or ())
                                          for a in call.args):
                return True
        return False

    def _is_nll(self, call: cst.CSTNode) -> bool:
        if not isinstance(call, cst.Call):
            return False
        model = self.model
        q = model.qualified_name(call.func)
        if q in _NLL:
            return True
        for b in (model.bindings_of(call.func) or ()) if isinstance(call.func, (cst.Name, cst.Attribute)) else ():
            if isinstance(b.value, cst.Call) and model.qualified_name(b.value.func) in _NLL_CLASSES:
                return True
        return False

    def _fix(self, log_call: cst.Call, value: cst.CSTNode) -> RuleFix | None:
        """``log(softmax(args))`` -> ``log_softmax(args)``, for a softmax call written in place."""
        if not isinstance(value, cst.Call):
            return None
        if log_call.args and (len(log_call.args) != 1 or log_call.args[0].keyword is not None
                              or log_call.args[0].star):
            return None  # torch.log(p, out=buffer)
        func = value.func
        q = self.model.qualified_name(func)
        if isinstance(func, cst.Attribute) and func.attr.value == "softmax" and (q is None or q in _SOFTMAX_FUNCTIONS):
            new_func: cst.BaseExpression = func.with_changes(attr=cst.Name("log_softmax"))
        elif isinstance(func, cst.Name) and q in _SOFTMAX_FUNCTIONS:
            name = spelling(self.model, log_call, q.rsplit(".", 1)[0] + ".log_softmax")
            if name is None:
                return None
            new_func = cst.parse_expression(name)
        else:
            return None
        # Keep the log call's own parentheses, and drop the softmax call's (they are inside the log).
        new = value.with_changes(func=new_func, lpar=log_call.lpar, rpar=log_call.rpar)
        return RuleFix(SAFE, (Replace(log_call, new),))
