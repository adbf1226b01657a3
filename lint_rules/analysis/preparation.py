"""Passes that prepare training rather than measure it (used by TRN602).

A function that runs the model over data without training it looks like an evaluation.
When every caller hands what it returns to a function of this file that trains
(``bank = init_memory(train_loader, model)`` then ``train(train_loader, model, opt, bank)``),
it computes an input of the training (a memory bank, cluster centroids, pseudo-labels):
the model's training mode is the mode the training itself runs in, not a forgotten
``eval()``. Facts, not findings: built once per file with ``model.fact(Preparation)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.summaries import Summaries

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel


class Preparation:
    """Which functions of one file compute inputs of its training."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._feeds: dict[int, bool] = {}

    def feeds_training(self, fn: cst.FunctionDef) -> bool:
        """Whether every call of ``fn`` in this file (there is one at least) binds its result to names
        and, later in the same function, hands one of them to a function of this file that trains
        (calls ``backward()`` or steps an optimizer, itself or through its helpers)."""
        key = id(fn)
        found = self._feeds.get(key)
        if found is None:
            sites = self.model.call_sites(fn)
            found = self._feeds[key] = bool(sites) and all(self._site_feeds(site, fn) for site in sites)
        return found

    def _site_feeds(self, site: cst.Call, fn: cst.FunctionDef) -> bool:
        model = self.model
        bound = model.parent(site)
        if not isinstance(bound, cst.Assign) or bound.value is not site:
            return False  # the result is used in place (printed, compared, returned): no input of training
        names = {n for t in bound.targets for n in _names(t.target)}
        if not names:
            return False
        return any(isinstance(arg.value, cst.Name) and arg.value.value in names
                   for other in model.fact(Summaries).training_calls_beside(site, fn, after=True)
                   for arg in other.args)


def _names(target: cst.CSTNode) -> set[str]:
    """The plain names an assignment target binds: ``x``, each name of ``a, (b, c)``."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _names(e.value)}
    return set()
