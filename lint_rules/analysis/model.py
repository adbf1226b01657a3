"""The per-file program model every rule receives: syntax and scopes
(:mod:`lint_rules.analysis.scopes`) plus the facts built on top of them.

Imports go one way: ``scopes`` <- ``kinds`` <- ``training`` <- ``model``. Fact
modules take a :class:`~lint_rules.analysis.scopes.ScopeModel` and are cached per
file with :meth:`~lint_rules.analysis.scopes.ScopeModel.fact`, built on first use.
"""

from __future__ import annotations

import libcst as cst

from lint_rules.analysis.grad_mode import GradMode
from lint_rules.analysis.kinds import kind_of as _kind_of
from lint_rules.analysis.scopes import (  # noqa: F401  (re-exported for rules)
    ASSIGN, CLASS, DEF, FOR, IMPORT, OTHER, PARAM, WITH, Binding, Scope, ScopeModel, call_method,
    dotted, is_false, is_none, is_true, keyword_arg)
from lint_rules.analysis.training import TrainingFacts


class FileModel(ScopeModel):
    """Everything known about one parsed file: one traversal, facts built lazily."""

    def kind_of(self, expr: cst.CSTNode) -> str | None:
        """What a value is: optimizer, scaler, scheduler, sampler, ..., or None."""
        return _kind_of(self, expr)

    @property
    def training(self) -> TrainingFacts:
        return self.fact(TrainingFacts)

    def in_no_grad(self, node: cst.CSTNode) -> bool:
        """Whether grad is disabled where ``node`` runs (:meth:`GradMode.disabled_at`)."""
        return self.fact(GradMode).disabled_at(node)
