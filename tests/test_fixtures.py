"""The reference implementations in ``fixtures/`` hold the linter to the truth.

Every ``fixtures/buggy/<case>__<bug>.py`` declares the codes that must fire in its
docstring (``Expected codes: TRN101``, or ``Expected codes: none`` for a bug no
lint rule can see) and marks the planted line with ``# BUG``; it may also name
the runtime checks that must catch it (``Plugin check: assert_grad_flow``, held
to it by ``tests/plugin/test_reference_checks.py``). Every
``fixtures/correct/<case>.py`` must lint clean and train when run.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from lint_rules import lint_source
from lint_rules.registry import active_rules, default_codes

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
CORRECT = sorted((FIXTURES / "correct").glob("*.py"))
BUGGY = sorted((FIXTURES / "buggy").glob("*.py"))
EVERY_RULE = default_codes(preview=True)  # the twins are held to every rule, preview included

_EXPECTED = re.compile(r"^Expected codes:\s*(?P<codes>.*?)\s*$", re.M)
_PLUGIN_CHECK = re.compile(r"^Plugin check:\s*(?P<checks>.*?)\s*$", re.M)
# Budget keys that must catch a twin (held by tests/plugin/test_budget_references.py).
_BUDGET_CHECK = re.compile(r"^Budget check:\s*\w", re.M)
# A twin that only the DDP harness can catch names the test holding it to that: 'Harness check: tests/x.py'.
_HARNESS_CHECK = re.compile(r"^Harness check:\s*(?P<test>\S+)\s*$", re.M)
_CHECK_NAME = re.compile(r"^[A-Za-z_]\w*$")
_CODE = re.compile(r"^TRN\d{3}$")
_BUG_COMMENT = re.compile(r"^#\s*BUG\b")


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def expected_codes(path: Path) -> set[str]:
    """The codes named on the ``Expected codes:`` line of the module docstring (``none``: empty)."""
    __tracebackhide__ = True
    found = _EXPECTED.findall(_docstring(path))
    if len(found) != 1:
        pytest.fail(f"{path.relative_to(ROOT)}: the module docstring needs exactly one line "
                    f"'Expected codes: TRN101' (comma-separated for several, 'none' for no rule); "
                    f"found {len(found)}")
    if found[0].lower() == "none":
        return set()
    codes = {c.strip() for c in found[0].split(",") if c.strip()}
    bad = sorted(c for c in codes if not _CODE.match(c))
    if not codes or bad:
        pytest.fail(f"{path.relative_to(ROOT)}: bad 'Expected codes:' line {found[0]!r}; "
                    f"list codes such as TRN101, separated by commas, or write 'none'")
    return codes


def plugin_checks(path: Path) -> list[str]:
    """The runtime checks named on the optional ``Plugin check:`` line (comma-separated)."""
    __tracebackhide__ = True
    found = _PLUGIN_CHECK.findall(_docstring(path))
    if not found:
        return []
    checks = [c.strip() for c in found[0].split(",") if c.strip()]
    bad = [c for c in checks if not _CHECK_NAME.match(c)]
    if len(found) > 1 or not checks or bad:
        pytest.fail(f"{path.relative_to(ROOT)}: the docstring needs at most one line 'Plugin check: "
                    f"assert_grad_flow' naming pytest_torchcheck assertions, separated by commas; "
                    f"found {found!r}")
    return checks


def bug_lines(source: str) -> set[int]:
    """Lines carrying a ``# BUG`` comment (comments only, never text in strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens
            if tok.type == tokenize.COMMENT and _BUG_COMMENT.match(tok.string)}


def _describe(findings) -> str:
    return "\n".join(f"  line {f.line}: {f.code} {f.message}" for f in findings) or "  (none)"


def test_fixture_directories_are_populated() -> None:
    assert CORRECT, f"no reference implementations in {FIXTURES / 'correct'}"
    assert BUGGY, f"no buggy twins in {FIXTURES / 'buggy'}"


@pytest.mark.parametrize("path", BUGGY, ids=_ids(BUGGY))
def test_buggy_twin_is_well_formed(path: Path) -> None:
    rel = path.relative_to(ROOT)
    case, sep, bug = path.stem.partition("__")
    assert sep and bug, f"{rel}: name it <case>__<bug>.py"
    assert (FIXTURES / "correct" / f"{case}.py").is_file(), \
        f"{rel}: no reference fixtures/correct/{case}.py to be the twin of"
    assert re.search(r"^Bug: \S", _docstring(path), re.M), \
        f"{rel}: the docstring needs a line 'Bug: <one sentence>'"
    assert bug_lines(path.read_text(encoding="utf-8")), f"{rel}: no '# BUG' comment marks the planted line"
    harness = _HARNESS_CHECK.search(_docstring(path))
    if harness:
        test_file = ROOT / harness.group("test")
        assert test_file.is_file() and path.name in test_file.read_text(encoding="utf-8"), (
            f"{rel}: 'Harness check: {harness.group('test')}' names a test file that does not use {path.name}")
    assert expected_codes(path) or plugin_checks(path) or _BUDGET_CHECK.search(_docstring(path)) or harness, (
        f"{rel}: 'Expected codes: none' and no 'Plugin check:' line: nothing is held to catch this bug")


@pytest.mark.parametrize("path", BUGGY, ids=_ids(BUGGY))
def test_buggy_twin_gets_exactly_its_expected_codes_on_the_bug_line(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    source = path.read_text(encoding="utf-8")
    expected = expected_codes(path)
    marked = bug_lines(source)
    assert marked, f"{rel}: no '# BUG' comment marks the planted line"

    findings = lint_source(source, rel, EVERY_RULE).findings
    found = {f.code for f in findings}
    assert found == expected, (
        f"{rel}: expected codes {sorted(expected)}, linter reported {sorted(found)}:\n"
        f"{_describe(findings)}")
    off_line = [f for f in findings if f.line not in marked]
    assert not off_line, (
        f"{rel}: findings away from the '# BUG' line(s) {sorted(marked)}:\n{_describe(off_line)}")
    if not expected:
        return  # a bug no rule can see: its '# BUG' line is for readers and the plugin checks
    unreported = marked - {f.line for f in findings}
    assert not unreported, f"{rel}: '# BUG' line(s) {sorted(unreported)} got no finding:\n{_describe(findings)}"


@pytest.mark.parametrize("path", CORRECT, ids=_ids(CORRECT))
def test_correct_reference_lints_clean(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    result = lint_source(path.read_text(encoding="utf-8"), rel, EVERY_RULE)
    assert not result.skipped, f"{rel}: the linter skipped the file (it must mention torch)"
    assert not result.findings, f"{rel}: false positive(s) on a correct reference:\n{_describe(result.findings)}"


def test_every_active_rule_has_a_buggy_twin() -> None:
    declared = set().union(*(expected_codes(p) for p in BUGGY))
    missing = sorted(set(active_rules()) - declared)
    assert not missing, (
        f"rule(s) {', '.join(missing)} have no buggy twin: add fixtures/buggy/<case>__<bug>.py "
        f"with 'Expected codes: <CODE>' in its docstring")


# The references run, as python would run each, in one process (tests/plugin/watch_corpus/driver.py
# --plain): one torch import for all of them. Those that start their own ranks (ddp*) run once, under
# `torchcheck run` (tests/lint/test_cli_run.py): each exits 0 only if it trained and its replicas
# agreed, so that run is their test as programs too, and the suite pays for their ranks once.
SPAWNING = [p for p in CORRECT if p.name.startswith("ddp")]
IN_ONE_PROCESS = [p for p in CORRECT if p not in SPAWNING]


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    from tests.plugin.watch_helpers import drive

    found = drive(tmp_path_factory, "plain_references", "--plain", "--scripts",
                  *(str(p) for p in IN_ONE_PROCESS))
    return {key.split("/", 1)[1]: p for key, p in found.items()}


@pytest.mark.parametrize("path", IN_ONE_PROCESS, ids=_ids(IN_ONE_PROCESS))
def test_correct_reference_runs(path: Path, plain_runs: dict[str, dict]) -> None:
    result = plain_runs[path.name]
    assert result["exit_code"] == 0, (
        f"{path.relative_to(ROOT)} exited with {result['exit_code']}\n--- output ---\n{result['output']}")


def test_cli_reports_every_linted_buggy_file_and_no_correct_file() -> None:
    # --preview: the buggy twins name preview rules too, and each must still be caught
    proc = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--preview", "fixtures"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1, f"exit code {proc.returncode}, expected 1\n{out}\n{proc.stderr}"
    linted = [p for p in BUGGY if expected_codes(p)]
    missing = [p.relative_to(ROOT).as_posix() for p in linted if p.relative_to(ROOT).as_posix() not in out]
    assert not missing, f"buggy files missing from the CLI output: {missing}\n{out}"
    flagged = [p.relative_to(ROOT).as_posix() for p in CORRECT if p.relative_to(ROOT).as_posix() in out]
    assert not flagged, f"correct files reported by the CLI: {flagged}\n{out}"
