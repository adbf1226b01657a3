"""How to write a torch name at a given place, through the file's own imports (for fixes,
which never add an import)."""

from __future__ import annotations

import libcst as cst

from lint_rules.analysis.scopes import IMPORT, ScopeModel as FileModel


def spelling(model: FileModel, node: cst.CSTNode, target: str) -> str | None:
    """Source text that names ``target`` (``torch.nn``) at ``node``: ``nn`` after
    ``from torch import nn``, ``torch.nn`` after ``import torch``; None when no import
    in scope reaches it (or its name is shadowed there)."""
    best: tuple[int, str] | None = None
    here = model.scope_at(node)
    scope = here
    seen: set[str] = set()
    while scope is not None:
        for name, bindings in scope.bindings.items():
            if name in seen:
                continue
            seen.add(name)
            quals = {b.qualname for b in bindings if b.kind == IMPORT}
            if len(quals) != 1 or any(b.kind != IMPORT for b in bindings):
                continue
            q = quals.pop()
            if q is None or not (target == q or target.startswith(q + ".")):
                continue
            if model.lookup(name, here) is not bindings:
                continue  # shadowed where the fix goes
            if best is None or len(q) > best[0]:
                best = (len(q), name + target[len(q):])
        scope = scope.parent
    return best[1] if best else None
