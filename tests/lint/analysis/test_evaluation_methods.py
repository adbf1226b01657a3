"""Inference methods of a module class (``predict``, ``predict_*``, ``infer``, ``inference``) that run
the module in whatever mode it was left in (analysis/evaluation.py ``inference_method_runs``), and what
TRN602 makes of them."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules import registry
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.engine import lint_source

TAGGER = """
import torch
from torch import nn

class SequenceLabeler(nn.Module):
    def __init__(self, vocab, tags):
        super().__init__()
        self.embed = nn.Embedding(vocab, 64)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(64, tags)

    def forward(self, tokens):
        return self.out(self.drop(self.embed(tokens)))

    def predict_scores(self, tokens):
        with torch.no_grad():
            return self(tokens).softmax(-1)

    def predict(self, tokens):
        return self.predict_scores(tokens).argmax(-1)

    def inference(self, tokens):
        return self.forward(tokens).argmax(-1)
"""


def _runs(source: str) -> dict[str, list[str]]:
    module = cst.parse_module(textwrap.dedent(source))
    model = FileModel(module)
    facts = model.fact(FileFacts)
    return {fn.name.value: [module.code_for_node(c) for c in found] for fn in model.nodes(cst.FunctionDef)
            if (found := facts.inference_method_runs(fn))}


def _findings(source: str) -> list[tuple[int, str]]:
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == "TRN602"]


def test_inference_methods_that_run_the_module_in_any_mode() -> None:
    assert _runs(TAGGER) == {
        "predict_scores": ["self(tokens)"],
        "predict": ["self.predict_scores(tokens)"],  # through a helper of this class
        "inference": ["self.forward(tokens)"],
    }
    # possible: a caller may have switched the mode, as callers of library code do
    assert _findings(TAGGER) == [(17, "possible"), (20, "possible"), (23, "possible")]


@pytest.mark.parametrize(("change", "quiet"), [
    (("    def predict(self, tokens):\n", "    def predict(self, tokens):\n        self.eval()\n"),
     {"predict", "predict_scores"}),  # and predict_scores: its only caller switched to eval mode first
    (("class SequenceLabeler(nn.Module):", "class SequenceLabeler:"), {"predict", "predict_scores", "inference"}),
    (("    def inference(self, tokens):", "    def decode_batch(self, tokens):"), {"inference"}),
    (("    def inference(self, tokens):", "    def infer_labels(self, tokens):"), {"inference"}),
])
def test_methods_that_set_the_mode_or_are_no_module_inference_are_quiet(change: tuple[str, str], quiet: set) -> None:
    source = TAGGER.replace(*change)
    assert source != TAGGER
    assert not quiet & set(_runs(source))


def test_an_inference_method_that_a_forward_runs_runs_in_any_mode() -> None:
    wrapped = TAGGER + """
class TwoStage(nn.Module):
    def forward(self, tokens):
        return self.labeler.predict(tokens)
"""
    assert "predict" not in _runs(wrapped)
    assert "inference" in _runs(wrapped)
