"""Rule discovery, unique codes, and selection by code or prefix (``TRN1``, ``ALL``)."""

from __future__ import annotations

import importlib
import os
import re
from functools import lru_cache

from lint_rules.diagnostics import ERROR
from lint_rules.errors import UsageError
from lint_rules.records import record

TYPE_CHECKING = False  # typing is not imported: a warm cached run does not need it
if TYPE_CHECKING:
    from lint_rules.rule import Rule

CODE_RE = re.compile(r"^TRN\d{3}$")
_RULE_MODULE = re.compile(r"^trn\d{3}_\w+$")
SELECTOR_RE = re.compile(r"^(ALL|TRN\d{0,3})$")


@record(frozen=True)
class BuiltinCode:
    """A code the engine itself reports. Always on and not selectable, unless ``OPT_IN``:
    then it runs only when selected (``--extend-select TRN002``, or ``ALL``)."""

    CODE: str
    NAME: str
    MESSAGE: str
    DOC: str
    SEVERITY: str = ERROR
    OPT_IN: bool = False

    def documentation(self) -> str:
        return self.DOC.strip()

    def summary(self) -> str:
        return self.MESSAGE


SYNTAX_ERROR = BuiltinCode(
    "TRN000",
    "syntax-error",
    "File could not be parsed",
    """
## What it does
Reports a file that LibCST cannot parse, at the parser's position. The other files
are still linted.

## Why is this bad?
No rule can check a file that does not parse, so its training bugs go unseen.
""",
)

INTERNAL_ERROR = BuiltinCode(
    "TRN001",
    "internal-error",
    "A rule crashed on this file",
    """
## What it does
Reports that a torchcheck rule raised an exception on this file. The message names
the rule and the exception. The file's other findings are still reported, and the
run exits with code 2.

## Why is this bad?
The crashed rule checked nothing in this file. Please report it with the file.
""",
)

UNUSED_SUPPRESSION = BuiltinCode(
    "TRN002",
    "unused-suppression",
    "Suppression comment that suppresses nothing, or names an unknown torchcheck code",
    """
## What it does
Reports `# noqa: TRNnnn` and `# torchcheck: ignore[...]` comments that suppress no
finding on their line, and torchcheck codes in them that do not exist. Codes of
other tools (`# noqa: E501`) and bare `# noqa` comments are left alone: they may
serve another linter. Opt-in: enable it with `--extend-select TRN002` (or `ALL`).
Only codes that are enabled in the run are judged unused.

## Why is this bad?
A suppression that no longer suppresses anything hides the next real finding on
that line, and a misspelt code (`# noqa: TRN10`) suppresses nothing at all while
looking as if it did.

## Example
```python
opt.step()  # noqa: TRN101
```

Use instead:
```python
opt.step()
```

## Known problems
A suppression for a rule that is not enabled in this run is not judged.

## References
- https://docs.astral.sh/ruff/rules/unused-noqa/
""",
    "warning",
    True,
)

BUILTINS: dict[str, BuiltinCode] = {b.CODE: b for b in (SYNTAX_ERROR, INTERNAL_ERROR, UNUSED_SUPPRESSION)}


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule by code, sorted. Imports each ``rules/trnNNN_*.py`` once."""
    import lint_rules.rules as pkg
    from lint_rules.rule import Rule

    found: dict[str, type[Rule]] = {}
    for name in _rule_modules(pkg):
        module = importlib.import_module(f"{pkg.__name__}.{name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule \
                    and obj.__module__ == module.__name__:
                if obj.CODE in found or obj.CODE in BUILTINS:
                    raise RuntimeError(f"duplicate rule code {obj.CODE} in {module.__name__}")
                found[obj.CODE] = obj
    return dict(sorted(found.items()))


@lru_cache(maxsize=1)
def rule_codes() -> tuple[str, ...]:
    """Every rule's code, read from the module names (``trn101_<name>.py``) without importing them."""
    import lint_rules.rules as pkg

    return tuple(sorted(name[:6].upper() for name in _rule_modules(pkg)))


def _rule_modules(pkg) -> list[str]:
    """The ``trnNNN_*`` module names of the rules package, sorted; read from its folder (``pkgutil`` would
    import ``inspect``, a tenth of a warm run's time)."""
    names = set()
    for folder in pkg.__path__:
        for entry in os.listdir(folder):
            stem, dot, ext = entry.partition(".")
            if ext == "py" and _RULE_MODULE.match(stem):
                names.add(stem)
    return sorted(names)


# Rules in the preview tier: off by default, on with ``--preview`` / ``preview = true``, or when
# selected by their exact code (as Ruff's preview rules). A rule stays here until its precision on
# real code (benchmarks/precision/) is at least 90%; the number is what it measured there.
PREVIEW_RULES: dict[str, str] = {
    "TRN105": "0 of 8 sampled findings worth a change",
    "TRN106": "0 of 6",
    "TRN108": "0 of 10 before it was limited to writes while training; 2 of 3 after",
    "TRN201": "0 of 10",
    "TRN202": "0 of 3",
    "TRN301": "0 of 5",
    "TRN304": "0 of 2",
    "TRN403": "0 of 6 before own-method calls were left alone; no finding after",
    "TRN602": "0 of 5",
    "TRN603": "0 of 1",
    "TRN701": "3 of 10",
    # Measured on repositories nobody here had read (issue #22): none of the sampled default findings of
    # these three was worth a change, whatever benchmarks/precision says.
    "TRN109": "0 of the sampled findings on unseen code",
    "TRN402": "0 of the sampled findings on unseen code",
    "TRN502": "0 of the sampled findings on unseen code",
    "TRN503": "0 of 8 certain findings on the fresh tune-side sample (issue #22, seventh session)",
}


# Preview rules with a certain core: they run by default too, and report there only the findings
# whose evidence makes them certain (``Rule.report(..., certain=True)``); the rest, possible, need
# ``--preview`` or the rule's own code. What the core is, in a line each.
CERTAIN_CORE: dict[str, str] = {
    "TRN602": "an evaluation that sets eval() on some models and not on another one trained in the file",
    "TRN701": "a library module's load, or a pretrained, downloaded or URL checkpoint's",
    "TRN106": "a local running total that nothing in the loop resets: every step's graph kept",
    "TRN301": "applied unconditionally in a function every spawned process runs, or re-applied every iteration",
    "TRN201": "a sync per element of a tensor or per parameter in a loop inside the step, or one whose result "
              "is unused",
    "TRN402": "a tensor with requires_grad=True kept as a plain attribute: never trained; one updated from "
              "its own value at run time: state lost from checkpoints; one pinned to a GPU by __init__",
    "TRN502": "sigmoid into binary cross-entropy under autocast, where it raises",
    "TRN108": "a hand-written optimizer step: a parameter's .data moved by a gradient while training",
    "TRN503": "the log of softmax probabilities handed to a negative log-likelihood loss",
}


def is_preview(code: str) -> bool:
    return code in PREVIEW_RULES


def hidden_by_default(code: str) -> bool:
    """Off unless ``--preview`` or selected by code: a preview rule without a certain core."""
    return code in PREVIEW_RULES and code not in CERTAIN_CORE


def preview_codes() -> set[str]:
    """Codes of the preview tier, read without importing the rules (a warm run does not need them)."""
    return {c for c in PREVIEW_RULES if c in rule_codes()}


def active_rules() -> dict[str, type[Rule]]:
    return {c: r for c, r in all_rules().items() if not r.REMOVED}


def lookup(code: str):
    """A rule class, builtin code or runtime-only check by its code, or None."""
    found = all_rules().get(code) or BUILTINS.get(code)
    if found is None and code in runtime_only_codes():
        found = runtime_check(code)
    return found


def default_codes(preview: bool = False) -> set[str]:
    """What runs when nothing is selected: every rule but the preview ones (unless ``preview``),
    not the opt-in codes."""
    codes = set(rule_codes())
    return codes if preview else {c for c in codes if not hidden_by_default(c)}


def known_codes() -> list[str]:
    return sorted([*BUILTINS, *rule_codes()])


# The runtime checks of ``torchcheck run``: pytest_torchcheck/watch/checks/trnNNN_<name>.py, a sibling
# package of this one (found by path: importing it would import the plugin's package for nothing).
_CHECKS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "pytest_torchcheck", "watch", "checks")


@lru_cache(maxsize=1)
def runtime_check_modules() -> dict[str, str]:
    """Each runtime check's code and module name, read from its folder (``trn101_x.py`` -> TRN101)."""
    found: dict[str, str] = {}
    for entry in sorted(os.listdir(_CHECKS_DIR)) if os.path.isdir(_CHECKS_DIR) else ():
        stem, _, ext = entry.partition(".")
        if ext == "py" and _RULE_MODULE.match(stem):
            code = stem[:6].upper()
            if code in found:
                raise RuntimeError(f"two runtime checks for {code}: {found[code]} and {stem}")
            found[code] = stem
    return found


def runtime_only_codes() -> list[str]:
    """The codes of runtime checks with no lint rule (a family of their own): ``torchcheck run`` only."""
    rules = set(rule_codes())
    return [c for c in runtime_check_modules() if c not in rules]


@lru_cache(maxsize=None)
def runtime_check(code: str):
    """The runtime check class of ``code`` (its module imported), or None."""
    name = runtime_check_modules().get(code)
    if name is None:
        return None
    from pytest_torchcheck.watch.check import Check

    module = importlib.import_module(f"pytest_torchcheck.watch.checks.{name}")
    classes = [obj for obj in vars(module).values()
               if isinstance(obj, type) and issubclass(obj, Check) and obj is not Check
               and obj.__module__ == module.__name__]
    if len(classes) != 1 or classes[0].CODE != code:
        raise RuntimeError(f"{module.__name__} must define one Check subclass with CODE = {code!r}")
    return classes[0]


def expand(selectors: list[str] | tuple[str, ...], source: str, preview: bool = True) -> set[str]:
    """Codes matched by ``selectors``; an unknown selector is a UsageError naming it.

    ``preview=False`` (a selection while preview is off): ``ALL`` and prefixes leave the preview
    rules out, an exact code selects its rule all the same. Ignores pass ``True`` (the default).
    The runtime-only codes (``torchcheck run``'s) are valid selectors too: a configuration shared by
    ``lint`` and ``run`` may name them; the linter has nothing to run for them.
    """
    codes = [*rule_codes(), *(c for c, b in BUILTINS.items() if b.OPT_IN), *runtime_only_codes()]
    hidden = set() if preview else {c for c in preview_codes() if hidden_by_default(c)}
    out: set[str] = set()
    bad: list[str] = []
    for raw in selectors:
        sel = raw.strip().upper()
        if not sel:
            continue
        if not SELECTOR_RE.match(sel):
            bad.append(raw)
            continue
        if sel == "ALL":
            out.update(c for c in codes if c not in hidden)
            continue
        matched = [c for c in codes if c.startswith(sel)]
        if not matched and sel not in BUILTINS:
            bad.append(raw)
        out.update(c for c in matched if c == sel or c not in hidden)
    if bad:
        listing = ", ".join(repr(b) + suggestion(b) for b in bad)
        raise UsageError(
            f"unknown rule code or prefix {listing} in {source}; "
            f"use ALL, a prefix such as TRN1, or one of: {', '.join([*known_codes(), *runtime_only_codes()])}"
        )
    return out


def exact_codes(selectors) -> set[str]:
    """The rule codes that ``selectors`` name one by one (``TRN602``, not ``TRN6`` or ``ALL``): their
    possible findings are reported without ``--preview``, as Ruff runs a preview rule selected by code."""
    names = {s.strip().upper() for s in selectors or ()}
    return {c for c in rule_codes() if c in names}


def suggestion(selector: str) -> str:
    """The code a bad selector was probably meant to be: a near code, or the code of a (near) rule name."""
    from lint_rules.errors import did_you_mean

    value = selector.strip()
    names = {r.NAME: c for c, r in [*BUILTINS.items(), *all_rules().items()]}
    if value.lower() in names:
        return f" (did you mean {names[value.lower()]!r}, {value.lower()}?)"
    if value.upper().startswith("TRN"):
        return did_you_mean(value.upper(), known_codes(), cutoff=0.8)
    return did_you_mean(value.lower(), (), spelled=names)


# The documentation site (mkdocs.yml's site_url: tests/test_docs.py keeps them equal). Each rule's page
# is docs/rules/<name>.md, served at rules/<name>/.
DOCS_URL = "https://torchcheck.readthedocs.io/en/latest/"


def docs_url(name: str) -> str:
    """The address of the documentation page of the rule named ``name`` (a finding's ``name``)."""
    return f"{DOCS_URL}rules/{name}/"


def fix_kind(rule) -> str:
    """What fix a rule offers, from its INVALID examples: safe, unsafe, "safe or unsafe", or none."""
    kinds = sorted({ex.applicability or "safe" for ex in getattr(rule, "INVALID", ())
                    if getattr(ex, "fixed", None) is not None})
    return " or ".join(kinds) if kinds else "none"
