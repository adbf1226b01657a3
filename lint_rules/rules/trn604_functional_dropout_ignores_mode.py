from __future__ import annotations

import re

import libcst as cst

from lint_rules.analysis.context import documented, in_test
from lint_rules.analysis.model import ASSIGN, PARAM
from lint_rules.rule import Rule
from lint_rules.analysis.modules import facts, mentions_name
from lint_rules.rules.examples import trn604 as examples

# torch.nn.functional dropouts: (input, p=0.5, training=True, inplace=False).
_DROPOUTS = frozenset({"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                       "feature_alpha_dropout"})
_P_POSITION = 1
_TRAINING_POSITION = 2
# scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, ...)
_SDPA = "scaled_dot_product_attention"
_SDPA_DROPOUT_POSITION = 4
_SDPA_MESSAGE = ("scaled_dot_product_attention(dropout_p=...) without checking self.training keeps "
                 "attention dropout on after model.eval()")
# nn.Dropout & co. built inside a method and called there: a new module is in training mode and
# is never registered, so the parent's eval() cannot reach it.
_DROPOUT_MODULES = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                              "FeatureAlphaDropout"})
# Words with which authors document dropout that is on in every mode on purpose.
# A bare "in eval mode" or "always" is left out: a comment naming the bug says it too.
_DELIBERATE = re.compile(r"monte[ -]?carlo|\bmc\b|mc[ _-]?dropout|test[ -]time dropout|"
                         r"always (on|applied|active|enabled)", re.I)
_MODULE_MESSAGE = ("nn.Dropout built and called inside a method is always in training mode: "
                   "model.eval() cannot reach it")


class FunctionalDropoutIgnoresMode(Rule):
    """
    ## What it does
    Flags `F.dropout(x, p)` (and `dropout1d/2d/3d`, `alpha_dropout`,
    `feature_alpha_dropout`) called in a method of an `nn.Module` subclass without
    a `training` argument, and `F.scaled_dot_product_attention(..., dropout_p=p)`
    with a non-zero `dropout_p` there. Quiet when `training=` is passed (normally
    `training=self.training`), when the probability depends on the mode
    (`p=self.p if self.training else 0.0`, directly or through a local variable),
    under `if self.training:`, and after `if not self.training: return x`. Also flags an `nn.Dropout(p)` (or
    `Dropout1d/2d/3d`, `AlphaDropout`) built and called inside such a method,
    `nn.Dropout(0.3)(h)` or through a local variable: the new module starts in
    training mode and is not a registered child, so `model.eval()` never reaches it.

    A plain `torchcheck lint` reports the calls that run in every forward pass:
    in `forward` (or `__call__`) or a method it calls through `self`, in a method
    that never reads `training`, with a probability that is not a parameter of the
    method. Elsewhere (a `training_step`, a loss, a method that reads the mode in a
    way not followed, `forward(self, x, dropout=0.0)`, a subclass of `nn.Dropout`, a
    test, a call whose comment or docstring says it is always on, Monte Carlo or
    test-time dropout) the finding is possible, reported with `--preview`.

    ## Why is this bad?
    Unlike `nn.Dropout`, the functional form does not know the module's mode:
    its `training` argument defaults to `True`, and `scaled_dot_product_attention`
    applies `dropout_p` whatever the mode. `model.eval()` therefore does not turn
    it off, and evaluation, inference and deployment keep dropping
    activations at random: accuracy is lower than it should be and varies from
    run to run on the same input, with no error.

    ## Example
    ```python
    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5))
    ```

    Use instead:
    ```python
    def forward(self, x):
        return self.fc(F.dropout(x, p=0.5, training=self.training))
    ```
    and `dropout_p=self.dropout if self.training else 0.0` for attention.

    ## Known problems
    An explicit `training=True` is taken as deliberate (Monte Carlo dropout) and
    not flagged. Functional dropout in free functions is not flagged, because the
    mode there must come from an argument the rule cannot see. Calls through
    `*args`/`**kwargs` are not flagged.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html
    - https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    """

    CODE = "TRN604"
    REQUIRES = ("ropout", "scaled_dot_product_attention")
    NAME = "functional-dropout-ignores-mode"
    MESSAGE = "F.dropout() without training=self.training stays on after model.eval()"
    FIX_TITLE = "Pass training=self.training, or use an nn.Dropout submodule"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model) -> None:
        super().__init__(model)
        self._facts = facts(model)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, (cst.Call, cst.Name)) and self._is_fresh_dropout_module(func):
            found = self._facts.module_method(node)
            if found is not None and not self._guarded_by_mode(node, found[0]):
                self.report(node, _MODULE_MESSAGE, certain=self._certain(node, None, *found))
            return
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name in _DROPOUTS:
            if _argument(node, "training", _TRAINING_POSITION) is not None:
                return
            message = None
            p = _argument(node, "p", _P_POSITION)
        elif name == _SDPA:
            p = _argument(node, "dropout_p", _SDPA_DROPOUT_POSITION)
            if p is None or _is_zero(p):
                return
            message = _SDPA_MESSAGE
        else:
            return
        if any(a.star for a in node.args):
            return
        if self.model.qualified_name(func) != f"torch.nn.functional.{name}":
            return
        found = self._facts.module_method(node)
        if found is None:
            return
        if any(self._depends_on_mode(a.value) for a in node.args):
            return  # p=self.p if self.training else 0.0
        if self._guarded_by_mode(node, found[0]):
            return
        self.report(node, message, certain=self._certain(node, p, *found))

    def _certain(self, node: cst.Call, p: cst.BaseExpression | None, method: cst.FunctionDef,
                 cls: cst.ClassDef) -> bool:
        """Certain when the call runs in every forward pass of the module (``forward`` or a method
        it calls), its author never reads the mode in that method, and the probability is not
        the caller's to choose. A method outside the forward pass may run in training only (a
        loss, a ``training_step``); a method that reads ``training`` elsewhere may guard the
        call in a way not seen here; ``forward(self, x, dropout=0.0)`` leaves it to the caller."""
        if not self._facts.runs_in_forward(method, cls):
            return False
        if mentions_name(method, "training") or self._is_dropout_class(cls):
            return False
        if in_test(self.model, node) or documented(self.model, node, _DELIBERATE):
            return False
        return not (isinstance(p, cst.Name) and any(
            b.kind == PARAM for b in self.model.reaching_bindings(p, node) or ()))

    def _is_dropout_class(self, cls: cst.ClassDef) -> bool:
        """A subclass of ``nn.Dropout`` & co. that overrides it: its own dropout, on purpose."""
        return any(self.model.qualified_name(b.value) in {f"torch.nn.{d}" for d in _DROPOUT_MODULES}
                   for b in cls.bases)

    def _is_fresh_dropout_module(self, func: cst.CSTNode) -> bool:
        """``nn.Dropout(p)`` itself, or a local name bound only to one in the same function."""
        if isinstance(func, cst.Name):
            bindings = self.model.bindings_of(func) or ()
            return bool(bindings) and all(
                b.kind == ASSIGN and isinstance(b.value, cst.Call) and self._is_dropout_call(b.value)
                and self.model.enclosing_function(b.node) is self.model.enclosing_function(func)
                for b in bindings)
        return isinstance(func, cst.Call) and self._is_dropout_call(func)

    def _is_dropout_call(self, call: cst.Call) -> bool:
        f = call.func
        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else None
        return name in _DROPOUT_MODULES and self.model.qualified_name(f) == f"torch.nn.{name}"

    def _depends_on_mode(self, expr: cst.CSTNode) -> bool:
        """``expr`` reads ``training``, directly or through a local variable."""
        if mentions_name(expr, "training"):
            return True
        if isinstance(expr, cst.Name):
            bindings = self.model.bindings_of(expr) or ()
            return any(b.value is not None and b.kind == ASSIGN and mentions_name(b.value, "training")
                       for b in bindings)
        return False

    def _guarded_by_mode(self, node: cst.Call, method: cst.FunctionDef) -> bool:
        """Inside a branch of ``if self.training:`` (or ``... if self.training else ...``), or after
        an early exit on the mode (``if not self.training: return x``)."""
        child: cst.CSTNode = node
        for a in self.model.ancestors(node):
            if isinstance(a, (cst.If, cst.IfExp)) and child is not a.test and mentions_name(a.test, "training"):
                return True
            if isinstance(a, (cst.IndentedBlock, cst.Module)) and any(
                    _exits_on_mode(s) for s in _before(a.body, child)):
                return True
            if a is method:
                return False
            child = a
        return False


def _argument(call: cst.Call, keyword: str, position: int) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if position < len(positional) else None


def _exits_on_mode(stmt: cst.CSTNode) -> bool:
    """``if not self.training: return x`` (or ``raise``): what follows runs in one mode only."""
    if not (isinstance(stmt, cst.If) and mentions_name(stmt.test, "training")):
        return False
    body = stmt.body.body  # the statements of a block, or the small statements of `if c: return x`
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return isinstance(last, (cst.Return, cst.Raise))


def _before(statements, child: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of a block that come before ``child`` (none when it is not one of them)."""
    for i, stmt in enumerate(statements):
        if stmt is child:
            return list(statements[:i])
    return []


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.evaluated_value) == 0.0
