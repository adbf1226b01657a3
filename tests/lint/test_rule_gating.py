"""Rule.REQUIRES: a rule does not run on a file that mentions none of its trigger words.

The gate is a speed-up only: with it and without it every example, fixture, realbug reduction and
multi-file test project gives the same findings. A trigger word list that misses a spelling a rule
reports (say TRN101's ``p.grad = None`` without ``zero_grad``) loses findings and fails here.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lint_rules import engine, lint_source, registry
from lint_rules.rule import Rule

REPO = Path(__file__).resolve().parents[2]
RULES = registry.active_rules()
EVERY_RULE = registry.default_codes(preview=True)


def _examples():
    for code, rule in sorted(RULES.items()):
        for kind in ("VALID", "INVALID"):
            for i, example in enumerate(getattr(rule, kind)):
                yield f"{code}-{kind.lower()}-{i}", textwrap.dedent(example.code)


def _files():
    roots = [REPO / "fixtures", REPO / "tests" / "lint" / "projects"]
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")


SOURCES = list(_examples()) + list(_files())


def _findings(source: str, path: str) -> list[tuple]:
    result = lint_source(source, path, EVERY_RULE)
    return [(f.line, f.column, f.end_line, f.end_column, f.code, f.message) for f in result.findings]


def _all_findings() -> dict[str, list[tuple]]:
    return {name: _findings(src, name if name.endswith(".py") else "example.py") for name, src in SOURCES}


def test_every_source_lints_alike_with_and_without_the_gate(monkeypatch):
    gated = _all_findings()
    assert sum(map(len, gated.values())) > 100  # the corpus has findings to lose
    # The gate is not a no-op: some rule is skipped on some of these sources.
    assert any(not rule.applies_to(src) for rule in RULES.values() for _, src in SOURCES)
    monkeypatch.setattr(engine, "_applicable", lambda enabled, source, facts=None: tuple(enabled))
    engine._interesting.cache_clear()
    try:
        ungated = _all_findings()
    finally:
        engine._interesting.cache_clear()
    assert [name for name in gated if gated[name] != ungated[name]] == []


def test_invalid_examples_mention_a_trigger_word():
    for code, rule in RULES.items():
        if not rule.REQUIRES:
            continue
        for example in rule.INVALID:
            assert rule.applies_to(example.code), f"{code}: an INVALID example mentions none of {rule.REQUIRES}"


def test_a_file_without_the_trigger_is_not_analysed_by_the_rule(monkeypatch):
    ran: list[str] = []
    real_init = Rule.__init__

    def spy(self, model):
        ran.append(self.CODE)
        real_init(self, model)

    monkeypatch.setattr(Rule, "__init__", spy)
    lint_source("import torch\nx = torch.ones(2)\n", "plain.py", ["TRN101", "TRN302", "TRN601"])
    # TRN601 has no trigger words (evaluation loops are found by their shape); the others need theirs.
    assert ran == ["TRN601"]
    ran.clear()
    lint_source("import torch\nopt.zero_grad()\n", "plain.py", ["TRN101", "TRN302"])
    assert ran == ["TRN101"]


def test_an_unused_suppression_of_a_gated_rule_is_still_reported():
    # TRN302 does not run (no sampler here), yet its suppression comment suppresses nothing.
    src = "import torch\nx = torch.ones(2)  # noqa: TRN302\n"
    result = lint_source(src, "plain.py", ["TRN302", registry.UNUSED_SUPPRESSION.CODE])
    assert [(f.line, f.code) for f in result.findings] == [(2, registry.UNUSED_SUPPRESSION.CODE)]


def test_the_engine_gate_is_rule_applies_to():
    # The engine searches each trigger word once per file; it must decide as Rule.applies_to does.
    enabled = [RULES[c] for c in sorted(RULES)]
    for _, src in SOURCES:
        assert engine._applicable(enabled, src) == tuple(r for r in enabled if r.applies_to(src))
