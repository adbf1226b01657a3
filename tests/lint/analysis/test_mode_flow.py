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


_TRAINER = """
import torch
from torch import nn
from engine import BaseRunner

class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

class TaggerRunner(BaseRunner):
    def __init__(self, tagger, opt):
        self.tagger = tagger
        self.opt = opt
        {init}

    def run_test(self, batches):
        self.tagger.eval()
        with torch.no_grad():
            return [self.tagger(x).argmax(-1) for x, _ in batches]

    def run_train(self, batches):
        {train_start}
        for x, y in batches:
            self.opt.zero_grad()
            loss = self.tagger.loss(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.tagger.parameters(), 5.0)
            self.opt.step()
"""


def _undone(init: str = "pass", train_start: str = "pass", extra: str = "") -> list[tuple[str, str]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_TRAINER.format(init=init, train_start=train_start)) + extra))
    return [(model.module.code_for_node(call), attr) for call, attr in model.fact(ModeFlow).evals_never_undone()]


def test_an_eval_in_one_method_of_a_trainer_class_that_another_method_trains_and_nothing_switches_back() -> None:
    assert _undone() == [("self.tagger.eval()", "self.tagger")]
    # a train() anywhere in the file (here, at the start of the training pass) switches it back
    assert _undone(train_start="self.tagger.train()") == []
    assert _undone(extra="\ndef resume(runner):\n    runner.tagger.train()\n    runner.run_train([])\n") != []
    assert _undone(extra="\n    def fit(self, b):\n        self.tagger.train(True)\n") == []


def test_an_eval_that_is_no_pass_between_trainings_is_left_alone() -> None:
    # set once at construction: a choice, not a forgotten switch
    moved = _TRAINER.replace("        self.tagger.eval()\n", "").format(init="self.tagger.eval()", train_start="pass")
    assert FileModel(cst.parse_module(textwrap.dedent(moved))).fact(ModeFlow).evals_never_undone() == []
    # the training pass sets the mode it trains in (an input optimised through a model kept in eval mode)
    assert _undone(train_start="self.tagger.eval()") == []
    # nothing asks for the model's parameters: it is not what the loop trains
    frozen = _TRAINER.replace("torch.nn.utils.clip_grad_norm_(self.tagger.parameters(), 5.0)", "pass")
    assert FileModel(cst.parse_module(textwrap.dedent(frozen.format(init="pass", train_start="pass")))) \
        .fact(ModeFlow).evals_never_undone() == []
    # a model of this file without dropout or batch norm, assigned by a method of the class
    plain = _TRAINER.replace("self.tagger = tagger", "self.tagger = None").format(
        init="pass", train_start="self.tagger = Mlp().cuda()")
    assert FileModel(cst.parse_module(textwrap.dedent(plain))).fact(ModeFlow).evals_never_undone() == []
    # a module class: its own train() switches its submodules back
    module = _TRAINER.replace("class TaggerRunner(BaseRunner):", "class TaggerRunner(nn.Module):")
    assert FileModel(cst.parse_module(textwrap.dedent(module.format(init="pass", train_start="pass")))) \
        .fact(ModeFlow).evals_never_undone() == []


def test_trn603_reports_the_eval_of_a_trainer_class_never_switched_back() -> None:
    from lint_rules import registry
    from lint_rules.engine import lint_source

    every = registry.default_codes(preview=True)
    source = textwrap.dedent(_TRAINER.format(init="pass", train_start="pass"))
    found = [(f.line, f.confidence) for f in lint_source(source, "t.py", every, possible=every).findings
             if f.code == "TRN603"]
    assert found == [(18, "possible")]
