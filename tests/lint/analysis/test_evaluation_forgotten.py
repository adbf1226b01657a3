"""A module forgotten in an evaluation block: the function switched another module to eval mode just
before, while the last mode it set on this one is train() (analysis/evaluation.py
``forgotten_after_eval``), and what TRN602 makes of it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules import registry
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.engine import lint_source

EPOCHS = """
import torch

def train_loop(synth, prosody_encoder, loader, opt, epochs):
    prosody_encoder.load_state_dict(torch.load("encoder.pt"))
    prosody_encoder.eval()
    for epoch in range(epochs):
        synth.train()
        for batch in loader:
            ref = prosody_encoder(batch.mel)
            loss = synth(batch.text, ref)
            prosody_encoder.train()
            loss = loss + cycle(prosody_encoder(synth.last_mel), ref)
            opt.zero_grad()
            loss.backward()
            opt.step()
        synth.eval()
        if epoch % 10 == 0:
            default_style = prosody_encoder(reference_mel)
            torch.save({"synth": synth.state_dict(), "style": default_style}, "ckpt.pt")
"""


def _forgotten(source: str) -> list[tuple[str, tuple[str, str]]]:
    module = cst.parse_module(textwrap.dedent(source))
    model = FileModel(module)
    facts = model.fact(FileFacts)
    return [(module.code_for_node(c.func), found) for c in model.nodes(cst.Call)
            if (found := facts.forgotten_after_eval(c)) is not None]


def _findings(source: str) -> list[tuple[int, str]]:
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == "TRN602"]


def test_a_module_left_in_train_mode_by_the_training_loop_is_forgotten_after_another_s_eval() -> None:
    assert _forgotten(EPOCHS) == [("prosody_encoder", ("prosody_encoder", "synth"))]
    assert _findings(EPOCHS) == [(19, "certain")]


@pytest.mark.parametrize(("change", "why"), [
    (("        synth.eval()\n        if", "        synth.eval()\n        prosody_encoder.eval()\n        if"),
     "the module is switched too"),
    (("            prosody_encoder.train()\n", ""), "its last mode is eval(), set before the loop"),
    (("            torch.save(", "            opt.step()\n            torch.save("),
     "a step follows in the same iteration: a training step, not an evaluation block"),
    (("        synth.eval()\n", ""), "no other module was switched: nothing says evaluation"),
])
def test_near_misses_are_not_forgotten(change: tuple[str, str], why: str) -> None:
    source = EPOCHS.replace(*change)
    assert source != EPOCHS
    assert _forgotten(source) == [], why


def test_inside_the_training_step_a_module_switched_next_to_another_is_not_forgotten() -> None:
    # prosody_encoder.eval(), then synth(...) whose loss the backward() below takes: training, not evaluation
    source = EPOCHS.replace("            ref = prosody_encoder(batch.mel)\n",
                            "            prosody_encoder.eval()\n            ref = prosody_encoder(batch.mel)\n")
    assert source != EPOCHS
    assert ("synth", ("synth", "prosody_encoder")) not in _forgotten(source)
