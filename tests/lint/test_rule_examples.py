"""Every rule's VALID and INVALID examples become test cases (Fixit style)."""

from __future__ import annotations

import re
import textwrap

import pytest

from lint_rules import lint_source, registry

RULES = registry.active_rules()


def _cases(kind: str, where=lambda example: True):
    # `where` keeps only the examples a test applies to, so every collected case asserts something
    # (ids keep the example's index in its list either way).
    for code, rule in RULES.items():
        for i, example in enumerate(getattr(rule, kind)):
            if where(example):
                yield pytest.param(code, example, id=f"{code}-{kind.lower()}-{i}")


@pytest.mark.parametrize(("code", "example"), list(_cases("VALID")))
def test_valid_example_is_quiet(code, example):
    src = textwrap.dedent(example.code)
    result = lint_source(src, "example.py", [code])
    assert result.findings == [], "\n".join(f"{f.line}: {f.code} {f.message}" for f in result.findings)


@pytest.mark.parametrize(("code", "example"), list(_cases("INVALID")))
def test_invalid_example_is_flagged_on_marked_lines(code, example):
    src = textwrap.dedent(example.code)
    expected = example.expected_lines
    assert expected, "an INVALID example must mark at least one line with '# BUG'"
    result = lint_source(src, "example.py", [code])
    assert not result.internal_error
    assert {f.code for f in result.findings} == {code}
    assert sorted(f.line for f in result.findings) == expected


@pytest.mark.parametrize(("code", "example"), list(_cases("INVALID")))
def test_invalid_example_flagged_with_every_rule_enabled(code, example):
    # The other rules must not crash on it; this rule's finding survives.
    result = lint_source(textwrap.dedent(example.code), "example.py", registry.default_codes(preview=True))
    assert not result.internal_error, [f.message for f in result.findings]
    assert code in {f.code for f in result.findings}


SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "Use instead:", "## Known problems",
            "## References")


@pytest.mark.parametrize("code", list(RULES))
def test_rule_metadata(code):
    rule = RULES[code]
    assert registry.CODE_RE.match(rule.CODE)
    doc = rule.documentation()
    for section in SECTIONS:
        assert section in doc, f"{code} docs lack {section!r}"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", rule.NAME), rule.NAME
    assert not rule.NAME.startswith(("avoid-", "use-", "no-")), "names describe the flagged pattern"
    assert rule.MESSAGE and rule.FIX_TITLE
    assert len(rule.VALID) >= 3, f"{code} needs at least three VALID examples"
    assert len(rule.INVALID) >= 3, f"{code} needs at least three INVALID examples"
    module = rule.__module__.rsplit(".", 1)[1]
    assert module == f"{code.lower()}_{rule.NAME.replace('-', '_')}", "one module per rule, named after it"


def test_codes_and_names_are_unique():
    names = [r.NAME for r in RULES.values()] + [b.NAME for b in registry.BUILTINS.values()]
    assert len(names) == len(set(names))
    assert not set(RULES) & set(registry.BUILTINS)


def test_selector_expansion():
    runtime = set(registry.runtime_only_codes())  # torchcheck run's own codes (TRN9): valid selectors
    assert runtime and all(c.startswith("TRN9") for c in runtime)
    assert registry.expand(["ALL"], "t") == set(RULES) | {"TRN002"} | runtime  # with the opt-in TRN002
    # preview rules are off, but those with a certain core run (and report only certain findings)
    assert registry.default_codes() == set(RULES) - (set(registry.PREVIEW_RULES) - set(registry.CERTAIN_CORE))
    assert set(registry.CERTAIN_CORE) <= set(registry.PREVIEW_RULES)
    assert registry.default_codes(preview=True) == set(RULES)
    assert registry.expand(["TRN1"], "t") == {c for c in RULES if c.startswith("TRN1")}
    assert registry.expand(["trn301"], "t") == {"TRN301"}
    assert registry.expand(["TRN9"], "t") == runtime
    with pytest.raises(registry.UsageError, match="'TRN8888'.*in --select"):
        registry.expand(["TRN8888"], "--select")
    with pytest.raises(registry.UsageError, match="'E501'"):
        registry.expand(["E501"], "--select")


# ----------------------------------------------------------------- fixes
def _fix(src: str, code: str, unsafe: bool) -> str:
    from lint_rules.fixes import fix_until_stable

    fixed, _, _, error = fix_until_stable(src, lambda text: lint_source(text, "example.py", [code]), unsafe)
    assert error is None, error
    return fixed


@pytest.mark.parametrize(("code", "example"), list(_cases("INVALID")))
def test_fix_output_is_exact_idempotent_and_parses(code, example):
    src = textwrap.dedent(example.code)
    offered = [f.fix for f in lint_source(src, "example.py", [code]).findings if f.fix is not None]
    if example.fixed is None:
        assert not offered, "this example declares no fix (give it `fixed=`), but the rule offers one"
        return
    expected = textwrap.dedent(example.fixed)
    fixed = _fix(src, code, unsafe=True)
    assert fixed == expected
    compile(fixed, "example.py", "exec")  # the fixed file parses
    assert _fix(fixed, code, unsafe=True) == fixed  # a second --fix changes nothing
    if example.applicability is not None:
        assert {f.applicability for f in offered} == {example.applicability}


@pytest.mark.parametrize(("code", "example"), list(_cases(
    "INVALID", lambda e: e.fixed is not None and e.applicability is not None)))
def test_unsafe_fixes_need_the_opt_in(code, example):
    src = textwrap.dedent(example.code)
    safe_only = _fix(src, code, unsafe=False)
    assert safe_only == (textwrap.dedent(example.fixed) if example.applicability == "safe" else src)


@pytest.mark.parametrize(("code", "example"), list(_cases("INVALID", lambda e: e.fixed is not None)))
def test_fixes_never_touch_suppressed_lines(code, example):
    src = textwrap.dedent(example.code)
    touched = {line for f in lint_source(src, "example.py", [code]).findings if f.fix
               for e in f.fix.edits for line in range(e.line, e.end_line + 1)}
    # A suppression of another torchcheck code on each line a fix would edit: the findings
    # stay (the comment does not name them), their fixes go.
    lines = src.splitlines(keepends=True)
    for i in touched:
        lines[i - 1] = lines[i - 1].rstrip("\n") + "  # noqa: TRN999\n"
    suppressed = "".join(lines)
    result = lint_source(suppressed, "example.py", [code])
    assert sorted(f.line for f in result.findings) == example.expected_lines
    assert all(f.fix is None for f in result.findings)
    assert _fix(suppressed, code, unsafe=True) == suppressed


def test_rules_with_fixes_say_how_safe_they_are():
    with_fixes = {code for code, rule in RULES.items() if any(e.fixed is not None for e in rule.INVALID)}
    assert {"TRN303", "TRN401", "TRN403", "TRN503", "TRN701", "TRN802"} <= with_fixes
    for code in with_fixes:
        assert "## Fix safety" in RULES[code].documentation(), code
