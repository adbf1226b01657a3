"""Generated Python programs (hypothesmith) made to look like PyTorch code, and the corpus
of bundled sources that mutations start from."""

from __future__ import annotations

import functools
import random
import textwrap
from pathlib import Path

import hypothesmith
import libcst as cst
from hypothesis import strategies as st

from lint_rules import registry
from tests.lint.fuzzing.mutate import VOCABULARY, splice_program

ROOT = Path(__file__).resolve().parents[3]


@functools.lru_cache(maxsize=None)
def corpus() -> tuple[tuple[str, str], ...]:
    """(name, source) of every bundled fixture and every rule's VALID and INVALID example."""
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
           for p in sorted((ROOT / "fixtures").rglob("*.py"))]
    for code, rule in sorted(registry.active_rules().items()):
        for kind in ("VALID", "INVALID"):
            for i, example in enumerate(getattr(rule, kind)):
                out.append((f"{code}-{kind.lower()}-{i}", textwrap.dedent(example.code)))
    return tuple(out)


def sources() -> tuple[str, ...]:
    return tuple(source for _, source in corpus())


@functools.lru_cache(maxsize=None)
def fixable() -> tuple[tuple[str, str], ...]:
    """The sources where a rule with a fix fires: those rules' INVALID examples and the buggy
    fixtures whose docstring names them."""
    from lint_rules.engine import lint_source

    fixing = {code for code, rule in registry.active_rules().items()
              if any(f.fix is not None for example in rule.INVALID
                     for f in lint_source(textwrap.dedent(example.code), "host.py", [code]).findings)}
    return tuple((name, source) for name, source in corpus()
                 if name.split("-", 1)[0] in fixing and "-invalid-" in name
                 or name.startswith("fixtures/buggy/") and any(code in source for code in fixing))


def hosts() -> tuple[tuple[str, str], ...]:
    """What mutations start from: the corpus, and the fixable sources three times over (few
    sources have a fix; without the weight most mutants would never reach the fix path)."""
    return corpus() + fixable() * 3


def host(seed: int, starts: tuple[tuple[str, str], ...] | None = None) -> tuple[str, str]:
    """The (name, source) that mutation ``seed`` starts from: drawn, so that any run of
    consecutive seeds spreads over the whole list rather than its first entries."""
    starts = starts or hosts()
    return starts[random.Random(seed).randrange(len(starts))]


class _Rename(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.mapping.get(updated.value)
        return updated.with_changes(value=new) if new else updated


@functools.lru_cache(maxsize=None)
def _python() -> st.SearchStrategy[str]:
    # Built once: each from_grammar() compiles its own Lark parser (seconds).
    return st.one_of(hypothesmith.from_node(), hypothesmith.from_grammar())


@st.composite
def torch_programs(draw: st.DrawFn) -> str:
    """A valid program from hypothesmith (from its grammar or its LibCST node strategies), its
    names mapped onto a training vocabulary, placed after ``import torch`` or spliced into a
    bundled file. Without the word ``torch`` the linter would skip the file unread."""
    source = draw(_python())
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:  # the grammar allows a little LibCST does not: lint it as is
        return "import torch\n" + source
    names: list[str] = []
    stack: list[cst.CSTNode] = [module]
    while stack:  # document order does not matter here; determinism does, and a list keeps it
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value not in names:
            names.append(node.value)
        stack.extend(node.children)
    mapping = {name: draw(st.sampled_from(VOCABULARY)) for name in names
               if name not in ("True", "False", "None") and draw(st.booleans())}
    module = module.visit(_Rename(mapping))
    if draw(st.booleans()):
        return "import torch\n" + module.code
    host = draw(st.sampled_from(sources()))
    return splice_program(host, module, draw(st.integers(0, 2**32 - 1)))
