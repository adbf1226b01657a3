"""scripts/add_rule.py scaffolds a rule that the registry finds and the rule tests hold, on a copy of the tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What the script and the rule tests read: the packages, the scripts, the generated pages, a reference
# script for the twin, and the rule-example tests with their conftest.
COPIED = ["lint_rules", "scripts", "docs/rules", "fixtures/correct", "pyproject.toml", "tests/__init__.py",
          "tests/conftest.py", "tests/lint/__init__.py", "tests/lint/test_rule_examples.py"]

# What a contributor writes into the scaffold's visit method: report every torch.todo() call, the
# call the INVALID placeholders mark with # BUG.
IMPLEMENTATION = ('        if self.model.qualified_name(node.func) == "torch.todo":\n'
                  '            self.report(node)\n')


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for name in COPIED:
        source, target = ROOT / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)
    return root


def _python(tree: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the copy's lint_rules, not this checkout's
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _rule_tests(tree: Path) -> subprocess.CompletedProcess[str]:
    return _python(tree, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests/lint/test_rule_examples.py",
                   "-k", "TRN905")


def test_a_scaffolded_rule_is_found_fails_until_filled_and_then_passes(tree: Path) -> None:
    done = _python(tree, "scripts/add_rule.py", "TRN905", "tensor-todo-call")
    assert done.returncode == 0, done.stdout + done.stderr
    rule = tree / "lint_rules" / "rules" / "trn905_tensor_todo_call.py"
    examples = tree / "lint_rules" / "rules" / "examples" / "trn905.py"
    twin = tree / "fixtures" / "buggy" / "classifier__tensor_todo_call.py"
    assert rule.is_file() and examples.is_file() and twin.is_file()
    assert "Expected codes: TRN905" in twin.read_text()
    assert (tree / "docs" / "rules" / "tensor-todo-call.md").is_file()  # the docs were regenerated
    assert "[tensor-todo-call](tensor-todo-call.md)" in (tree / "docs" / "rules" / "index.md").read_text()

    found = _python(tree, "-c", "from lint_rules import registry; r = registry.all_rules()['TRN905']; "
                                "print(r.__name__, r.NAME)")
    assert found.stdout.split() == ["TensorTodoCall", "tensor-todo-call"], found.stderr

    unfilled = _rule_tests(tree)
    assert unfilled.returncode == 1, unfilled.stdout  # the INVALID placeholders are not reported yet
    assert "test_invalid_example_is_flagged_on_marked_lines[TRN905-invalid-0] FAILED" in unfilled.stdout
    assert "test_rule_metadata[TRN905] PASSED" in unfilled.stdout  # every doc section is already there

    text = rule.read_text()
    rule.write_text(text.replace("        return None\n", IMPLEMENTATION))
    filled = _rule_tests(tree)
    assert filled.returncode == 0, filled.stdout + filled.stderr
    assert "test_rule_metadata[TRN905] PASSED" in filled.stdout
    assert "test_invalid_example_is_flagged_on_marked_lines[TRN905-invalid-2] PASSED" in filled.stdout


@pytest.mark.parametrize(("code", "name", "message"), [
    ("TRN101", "some-new-pattern", "code TRN101 is taken by lint_rules/rules/trn101_"),
    ("TRN906", "data-parallel", "name 'data-parallel' is taken by lint_rules/rules/trn301_data_parallel.py"),
    ("TRN95", "some-new-pattern", "bad code 'TRN95'"),
    ("TRN012", "some-new-pattern", "TRN0xx are the built-in codes"),
    ("TRN906", "Some_Pattern", "bad name 'Some_Pattern'"),
    ("TRN906", "pattern", "bad name 'pattern'"),
    ("TRN906", "avoid-this-pattern", "name the pattern that is flagged, not the advice"),
])
def test_a_taken_or_malformed_code_or_name_is_refused(tree: Path, code: str, name: str, message: str) -> None:
    before = sorted(p.relative_to(tree) for p in tree.rglob("*") if "__pycache__" not in p.parts)
    done = _python(tree, "scripts/add_rule.py", code, name, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.relative_to(tree) for p in tree.rglob("*") if "__pycache__" not in p.parts) == before


def test_an_unknown_fixture_case_names_the_ones_there_are(tree: Path) -> None:
    done = _python(tree, "scripts/add_rule.py", "TRN907", "some-new-pattern", "--case", "nope", timeout=60)
    assert done.returncode == 2
    assert "no fixture fixtures/correct/nope.py for --case 'nope'; one of: " in done.stderr
    assert "classifier" in done.stderr
