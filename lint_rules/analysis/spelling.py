"""How to write a torch name at a given place, through the file's own imports (for fixes,
which never add an import)."""

from __future__ import annotations

import libcst as cst

from lint_rules.analysis.scopes import IMPORT, Scope, ScopeModel as FileModel


def spelling(model: FileModel, node: cst.CSTNode, target: str) -> str | None:
    """Source text that names ``target`` (``torch.nn``) at ``node``: ``nn`` after
    ``from torch import nn``, ``torch.nn`` after ``import torch``; None when no import
    in scope reaches it (or its name is shadowed there)."""
    best: tuple[int, str] | None = None
    here = model.scope_at(node)
    scope = here
    imports = model.fact(_ImportNames)
    inner: list[Scope] = []  # a name they bind hides the same name further out
    while scope is not None:
        for name, bindings, q in imports.of(scope):
            if not (target == q or target.startswith(q + ".")) or any(name in s.bindings for s in inner):
                continue
            if model.lookup(name, here) is not bindings:
                continue  # shadowed where the fix goes
            if best is None or len(q) > best[0]:
                best = (len(q), name + target[len(q):])
        inner.append(scope)
        scope = scope.parent
    return best[1] if best else None


class _ImportNames:
    """The names each scope binds by imports alone, of one qualified name each, in binding order:
    worked out once per scope (a module scope binds every function of the file, and a file can
    have a fix in each)."""

    def __init__(self, model: FileModel) -> None:
        self._by_scope: dict[int, list[tuple[str, list, str]]] = {}

    def of(self, scope: Scope) -> list[tuple[str, list, str]]:
        found = self._by_scope.get(id(scope))
        if found is None:
            found = self._by_scope[id(scope)] = []
            for name, bindings in scope.bindings.items():
                quals = {b.qualname for b in bindings if b.kind == IMPORT}
                if len(quals) != 1 or any(b.kind != IMPORT for b in bindings):
                    continue
                q = quals.pop()
                if q is not None:
                    found.append((name, bindings, q))
        return found
