"""Mode flow of a loop through helpers: switches, training steps, model calls."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import EVAL, TRAIN
from lint_rules.analysis.mode_flow import CALL, TRAINING, ModeFlow
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
def set_mode(model, mode):
    if mode == "train":
        model.train()
    else:
        model.eval()
def evaluate(net):
    net.eval()
def fit(model, loader, opt):
    for epoch in range(3):
        set_mode(model, "train")
        for x, y in loader:
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
        evaluate(model)
"""


def test_epoch_loop_events_in_the_loops_terms() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    epoch_loop = next(f for f in model.nodes(cst.For) if model.module.code_for_node(f.target) == "epoch")
    events = model.fact(ModeFlow).loop_events(epoch_loop)
    kinds = [(e.kind, e.receiver) for e in events]
    assert kinds == [(TRAIN, "model"), (CALL, "model"), (TRAINING, None), (TRAINING, None), (EVAL, "model")]
    assert model.module.code_for_node(events[-1].anchor) == "evaluate(model)"
