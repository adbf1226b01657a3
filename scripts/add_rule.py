"""Scaffold a new lint rule: its module, its examples, its buggy fixture twin and its docs page.

    python scripts/add_rule.py TRN905 some-pattern-name [--case classifier]

writes

    lint_rules/rules/trn905_some_pattern_name.py     the Rule subclass, every doc section to fill in
    lint_rules/rules/examples/trn905.py              three VALID and three INVALID placeholders
    fixtures/buggy/<case>__some_pattern_name.py      a copy of fixtures/correct/<case>.py to plant the bug in

and regenerates docs/rules/ (``scripts/gen_rule_docs.py``). The registry finds the rule by its file
name. Until the placeholders are replaced, the rule's INVALID examples and its twin fail their tests
(tests/lint/test_rule_examples.py, tests/test_fixtures.py): a scaffold never passes by accident.
It refuses a code or a name that is taken or malformed, naming what is wrong, and writes nothing then.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = re.compile(r"TRN[1-9]\d\d")  # TRN0xx are the built-in codes (syntax error, crash, unused noqa)
NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)+")
# Names say what pattern is flagged, never what to do instead (STYLE.md, test_rule_metadata).
ADVICE_PREFIXES = ("avoid-", "use-", "no-")

RULE_TEMPLATE = '''\
from __future__ import annotations

import libcst as cst

from lint_rules.rule import Rule
from lint_rules.rules.examples import {module_code} as examples


class {class_name}(Rule):
    """
    ## What it does
    TODO: what is flagged, precisely (the call, where it sits, what it is called on), and the
    near misses left alone.

    ## Why is this bad?
    TODO: the concrete training symptom (stale gradients, NaN, a silent slowdown, a DDP hang).

    ## Example
    ```python
    TODO: the bug
    ```

    Use instead:
    ```python
    TODO: the fix
    ```

    ## Known problems
    TODO: honest false positives and false negatives.

    ## References
    - TODO: the PyTorch documentation of the API involved
    """

    CODE = "{code}"
    NAME = "{name}"
    MESSAGE = "TODO: state the problem"
    FIX_TITLE = "TODO: an imperative action"
    # SEVERITY = WARNING      (from lint_rules.rule) for slow, fragile or deprecated code
    # REQUIRES = ("word",)    words every finding's file contains: the rule is skipped on other files

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        # TODO: ask self.model (qualified names, kinds, training loops, grad mode) and self.report(node)
        return None
'''

EXAMPLES_TEMPLATE = '''\
"""The examples of {code} ({class_name}): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

# TODO: replace every placeholder. Near misses belong in VALID (gradient accumulation, two
# optimizers, the call once per epoch); mark each line that must be reported with `# BUG`, and give
# an Invalid a `fixed=` (and `applicability=`) where the rule offers a fix.
VALID = [
    Valid(
        """
        # TODO: the correct pattern
        import torch
        """
    ),
    Valid(
        """
        # TODO: a near miss
        import torch
        """
    ),
    Valid(
        """
        # TODO: another near miss
        import torch
        """
    ),
]

INVALID = [
    Invalid(
        """
        # TODO: the textbook bug
        import torch
        torch.todo()  # BUG
        """
    ),
    Invalid(
        """
        # TODO: another spelling of it
        import torch
        torch.todo()  # BUG
        """
    ),
    Invalid(
        """
        # TODO: the bug where real code hides it (a helper, a branch, a method)
        import torch
        torch.todo()  # BUG
        """
    ),
]
'''

TWIN_DOCSTRING = '''\
"""Buggy twin of fixtures/correct/{case}.py: TODO say what was changed.

Expected codes: {code}
Bug: TODO one sentence: the bug and what it does to training.
"""
# TODO: plant the bug in the code below and end its line with the comment `# BUG`.
'''


class ScaffoldError(Exception):
    """A bad code, name or case: the message says which and what is allowed."""


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def plan(root: Path, code: str, name: str, case: str) -> dict[Path, str]:
    """The files to write and their text; raises :class:`ScaffoldError` on a bad or taken code or name."""
    if not CODE.fullmatch(code):
        raise ScaffoldError(f"bad code {code!r}: write TRN followed by three digits, the first 1-9 "
                            f"(TRN0xx are the built-in codes), e.g. TRN905")
    if not NAME.fullmatch(name):
        raise ScaffoldError(f"bad name {name!r}: write two or more lowercase words joined by hyphens, naming the "
                            f"flagged pattern, e.g. zero-grad-between-backward-and-step")
    if name.startswith(ADVICE_PREFIXES):
        raise ScaffoldError(f"bad name {name!r}: name the pattern that is flagged, not the advice "
                            f"(no {', '.join(repr(p) for p in ADVICE_PREFIXES)} prefix)")
    rules = root / "lint_rules" / "rules"
    module_code = code.lower()
    module_name = name.replace("-", "_")
    for existing in sorted(rules.glob("trn[0-9][0-9][0-9]_*.py")):
        if existing.name.startswith(module_code + "_"):
            raise ScaffoldError(f"code {code} is taken by {existing.relative_to(root)}: codes are never reused, "
                                f"even for a retired rule; pick a free one")
        if existing.stem[7:] == module_name:
            raise ScaffoldError(f"name {name!r} is taken by {existing.relative_to(root)}")
    correct = root / "fixtures" / "correct" / f"{case}.py"
    if not correct.is_file():
        cases = sorted(p.stem for p in (root / "fixtures" / "correct").glob("*.py"))
        raise ScaffoldError(f"no fixture {correct.relative_to(root)} for --case {case!r}; "
                            f"one of: {', '.join(cases)}")
    files = {
        rules / f"{module_code}_{module_name}.py": RULE_TEMPLATE.format(
            module_code=module_code, class_name=_class_name(name), code=code, name=name),
        rules / "examples" / f"{module_code}.py": EXAMPLES_TEMPLATE.format(code=code, class_name=_class_name(name)),
        root / "fixtures" / "buggy" / f"{case}__{module_name}.py":
            TWIN_DOCSTRING.format(case=case, code=code) + _without_docstring(correct.read_text(encoding="utf-8")),
    }
    taken = [p for p in files if p.exists()]
    if taken:
        raise ScaffoldError(f"{', '.join(str(p.relative_to(root)) for p in taken)} already exist(s); "
                            f"remove it or pick another code, name or case")
    return files


def _without_docstring(source: str) -> str:
    """The reference script without its module docstring (the twin gets its own)."""
    match = re.match(r'\s*("""|\'\'\')(.*?)\1[^\n]*\n', source, re.S)
    return source[match.end():] if match else source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code", help="the new rule's code, e.g. TRN905 (see CONTRIBUTING.md for the families)")
    parser.add_argument("name", help="kebab-case name of the flagged pattern, e.g. optimizer-created-in-loop")
    parser.add_argument("--case", default="classifier",
                        help="the fixtures/correct/<case>.py the buggy twin starts from (default: classifier)")
    args = parser.parse_args(argv)
    try:
        files = plan(ROOT, args.code.strip().upper(), args.name.strip(), args.case)
    except ScaffoldError as e:
        print(f"add_rule.py: error: {e}", file=sys.stderr)
        return 2
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"created {path.relative_to(ROOT)}")
    # The generator imports the rules from this tree, as the docs test will.
    docs = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_rule_docs.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    print(docs.stdout, end="")
    if docs.returncode != 0:
        print(f"add_rule.py: error: scripts/gen_rule_docs.py failed:\n{docs.stderr}", file=sys.stderr)
        return 1
    rule, _, twin = files
    print(f"\nNext: fill in every TODO of {rule.relative_to(ROOT)}, its examples and its twin, then\n"
          f"  python -m pytest tests/lint/test_rule_examples.py tests/test_fixtures.py "
          f"-k '{args.code.strip().upper()} or {twin.name}'\n"
          f"  python scripts/gen_rule_docs.py\n"
          f"A new rule belongs in registry.PREVIEW_RULES until benchmarks/precision/ shows nine findings in "
          f"ten are worth a change.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
