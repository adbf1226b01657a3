"""Evaluations written as comprehensions (analysis/evaluation.py ``comprehension_evaluation_calls``): over
data, or over inputs after the function put the model in eval mode; and what TRN601 makes of them."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules import registry
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.engine import lint_source

ENSEMBLE = """
import torch

class Restorer:
    def self_ensemble(self, lowres):
        self.generator_net.eval()
        views = [lowres, lowres.flip(-1), lowres.flip(-2)]
        outs = [self.generator_net(view) for view in views]
        self.restored = torch.stack(outs).mean(0)

def held_out_scores(model, test_loader):
    return sum(float((model(x).argmax(1) == y).sum()) for x, y in test_loader)
"""


def _comprehension_calls(source: str) -> list[list[str]]:
    module = cst.parse_module(textwrap.dedent(source))
    model = FileModel(module, frozenset({cst.ListComp, cst.GeneratorExp}))  # what TRN601 has collected
    facts = model.fact(FileFacts)
    comps = [n for tp in (cst.ListComp, cst.GeneratorExp) for n in model.nodes(tp)]
    return sorted([module.code_for_node(c.func) for c in found]
                  for comp in comps if (found := facts.comprehension_evaluation_calls(comp)))


def _findings(source: str) -> list[tuple[int, str]]:
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == "TRN601"]


def test_comprehensions_that_evaluate_after_eval_or_over_data() -> None:
    assert _comprehension_calls(ENSEMBLE) == [["model"], ["self.generator_net"]]
    assert _findings(ENSEMBLE) == [(8, "certain"), (12, "certain")]


@pytest.mark.parametrize(("change", "why"), [
    (("        self.generator_net.eval()\n", ""), "no eval(), and the views are no data"),
    (("        self.restored = torch.stack(outs).mean(0)\n",
      "        torch.stack(outs).mean().backward()\n"), "the function trains"),
    (("[self.generator_net(view) for view in views]", "[self.generator_net(lowres) for view in views]"),
     "the input is not the comprehension's target"),
])
def test_near_misses_are_no_evaluation(change: tuple[str, str], why: str) -> None:
    source = ENSEMBLE.replace(*change)
    assert source != ENSEMBLE
    assert ["self.generator_net"] not in _comprehension_calls(source), why


def test_a_comprehension_under_no_grad_is_quiet() -> None:
    source = ENSEMBLE.replace("        outs = [self.generator_net(view) for view in views]\n",
                              "        with torch.no_grad():\n"
                              "            outs = [self.generator_net(view) for view in views]\n")
    assert _findings(source) == [(13, "certain")]
