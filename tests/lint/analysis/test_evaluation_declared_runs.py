"""One-shot model runs that an eval() declares an evaluation (analysis/evaluation.py:
FileFacts.runs_module_method, FileFacts.eval_declared_run, FileFacts.evaluation_method_run)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
from torch import nn

def show_alignment(tts_model, sentence, out_png):
    tokens = encode_text(sentence)
    tts_model.eval()
    _, _, align = tts_model.inference(tokens)
    tts_model.train()
    draw(align.detach().cpu().numpy(), out_png)

def attention_map(model, x):
    model.eval()
    att = model.inference(x)
    return att

def no_switch(model, x):
    att = model.inference(x)
    draw(att.detach().numpy())

def summary(model, x):
    model.eval()
    return model.state_dict(x)

class Fitter:
    def __init__(self, width):
        self.module_ = nn.Linear(width, 2)
        self.optimizer_ = torch.optim.SGD(self.module_.parameters(), lr=0.1)

    def infer(self, x):
        return self.module_(x)

    def validation_step(self, xb, yb):
        self.module_.eval()
        pred = self.infer(xb)
        return {"loss": self.loss(pred, yb), "pred": pred}

    def train_step(self, xb, yb):
        self.module_.train()
        loss = self.loss(self.infer(xb), yb)
        loss.backward()
        self.optimizer_.step()
        return loss

class IterRunner:
    def train(self, loader):
        self.model.train()
        self.outputs = self.model.train_step(next(loader), self.optimizer)

    def val(self, loader):
        self.model.eval()
        self.outputs = self.model.val_step(next(loader))

    def report(self, loader):
        self.model.eval()
        self.outputs = self.model.val_step(next(loader))

class Scorer:
    def val(self, loader):
        self.model.eval()
        self.outputs = self.model.val_step(next(loader))
"""


def _runs() -> tuple[FileModel, FileFacts, dict[str, list[cst.Call]]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    by_function: dict[str, list[cst.Call]] = {}
    for fn in model.nodes(cst.FunctionDef):
        key = fn.name.value
        owner = model.parent(model.parent(fn))
        if isinstance(owner, cst.ClassDef):
            key = f"{owner.name.value}.{key}"
        by_function[key] = [c for c in model.within(cst.Call, fn) if model.enclosing_function(c) is fn]
    return model, model.fact(FileFacts), by_function


def test_a_method_named_for_running_a_module_on_data_runs_it() -> None:
    _, facts, calls = _runs()
    code = cst.Module([]).code_for_node
    running = sorted({code(c.func) for cs in calls.values() for c in cs if facts.runs_module_method(c)})
    # not state_dict(), not a helper of this file called on self, not a method of a value that is no module
    assert running == ["model.inference", "self.model.val_step", "tts_model.inference"]


def test_a_run_after_eval_in_a_function_that_hands_out_nothing_differentiable_is_declared() -> None:
    _, facts, calls = _runs()
    declared = {name for name, cs in calls.items() if any(facts.eval_declared_run(c) for c in cs)}
    # attention_map hands its output back; no_switch never declares an evaluation; summary runs nothing
    assert declared == {"show_alignment"}


def test_a_trainers_evaluation_method_after_eval_runs_the_module_with_autograd_on() -> None:
    _, facts, calls = _runs()
    passes = {name for name, cs in calls.items() if any(facts.evaluation_method_run(c) for c in cs)}
    # through its own helper (self.infer), or a method of the module; not a method not named for evaluating,
    # nor the val() of a class that trains nothing
    assert passes == {"Fitter.validation_step", "IterRunner.val"}
