"""The rules package: each rule is a thin query over the shared analyses (issue #22).

A rule module never decides a question the analyses answer once for every rule (grad mode, what
a value is, which function a call reaches) and keeps no tree walker of its own. The two rules
that kept a private walker moved it to analysis/mutations.py; a new one fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parents[2] / "lint_rules" / "rules"
MODULES = sorted(RULES.glob("trn[0-9][0-9][0-9]_*.py"))

# Names whose use means deciding grad mode, kinds or call binding outside lint_rules/analysis.
ANALYSIS_ONLY = {
    "NO_GRAD_CONTEXTS": "grad mode: analysis.grad_mode.GradMode / FileModel.in_no_grad",
    "SET_GRAD_ENABLED": "grad mode: GradMode.managed / GradMode.set_before",
    "grad_mode_of_expr": "grad mode: GradMode.of_expr",
    "grad_mode_of_with": "grad mode: GradMode.of_with",
    "name_hint": "kinds: model.kind_of",
    "_kind_from_bindings": "kinds: model.kind_of",
    "bind_arguments": "call binding: Summaries.bind / scopes.bind_arguments, through an analysis",
}
# Private walkers that predate this test, to move into analyses: (module stem, why it is still here).
# TRN104's and TRN108's moved to analysis/mutations.py; none is left.
KNOWN_WALKERS: dict[str, str] = {}


def test_there_are_rule_modules() -> None:
    assert len(MODULES) >= 30


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_a_rule_leaves_analysis_questions_to_the_analyses(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} \
        | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} \
        | {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    wrong = {name: where for name, where in ANALYSIS_ONLY.items() if name in used}
    assert not wrong, f"{path.name} answers an analysis question itself; ask {wrong}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_a_rule_keeps_no_tree_walker_of_its_own(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    walkers = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
               and any(isinstance(b, ast.Attribute) and b.attr in ("CSTVisitor", "CSTTransformer") for b in n.bases)]
    if path.stem in KNOWN_WALKERS:
        assert walkers, f"{path.stem} no longer has a private walker: drop it from KNOWN_WALKERS"
    else:
        assert not walkers, (f"{path.name} walks the tree itself ({', '.join(walkers)}): use the model "
                             f"(model.nodes, model.within, a fact of lint_rules/analysis)")
