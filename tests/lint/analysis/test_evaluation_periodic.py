"""Periodic evaluation inside a trainer's training loop, through helpers (analysis/evaluation.py):
the model run two helper calls deep (``eval_batch`` calling ``self.forward_loss``), a method named like
a model that is no model, and a training step in a helper between ``train()`` and the evaluation."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules import registry
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.engine import lint_source

TRAINER = """
import torch

class Trainer:
    def model_loss(self, batch):
        logits = self.wrapped_model(**batch).logits
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())

    def train_step(self, batch):
        self.optim.zero_grad()
        self.model_loss(batch).backward()
        self.optim.step()

    def eval_batch(self, batch, meter):
        loss = self.model_loss(batch)
        meter.update(loss)

    def fit(self):
        self.wrapped_model.train()
        for step, batch in enumerate(self.train_loader):
            self.train_step(batch)
            if step % 100 == 0:
                for held_step, held in enumerate(self.eval_batches):
                    with torch.inference_mode():
                        self.eval_batch(held, self.meter)
"""


def _held_loop(model: FileModel) -> cst.For:
    return next(lp for lp in model.nodes(cst.For) if cst.Module([]).code_for_node(lp.target) == "held_step, held")


def _findings(source: str, code: str) -> list[tuple[int, str]]:
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == code]


def test_the_model_runs_two_helper_calls_deep() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(TRAINER)))
    facts = model.fact(FileFacts)
    pairs = facts.evaluation_helper_calls(_held_loop(model))
    code = cst.Module([]).code_for_node
    assert [(code(site.func), code(inner.func)) for site, inner in pairs] == [("self.eval_batch", "self.wrapped_model")]


def test_a_method_of_this_file_named_like_a_model_is_no_model_call() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(TRAINER)))
    facts = model.fact(FileFacts)
    calls = {cst.Module([]).code_for_node(c.func): facts.is_model_call(c) for c in model.nodes(cst.Call)}
    assert calls["self.model_loss"] is False
    assert calls["self.wrapped_model"] is True


def test_a_helper_s_training_step_after_train_makes_it_no_deliberate_train_mode_pass() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(TRAINER)))
    facts = model.fact(FileFacts)
    assert not facts.mode_set_for(_held_loop(model))
    # the trainer puts the model in train mode and never in eval mode: certain
    assert _findings(TRAINER, "TRN602") == [(23, "certain")]
    assert _findings(TRAINER, "TRN601") == []  # inference_mode() around the helper's call


def test_a_periodic_evaluation_after_eval_is_quiet() -> None:
    fixed = TRAINER.replace("            if step % 100 == 0:\n",
                            "            if step % 100 == 0:\n                self.wrapped_model.eval()\n")
    assert fixed != TRAINER
    assert _findings(fixed, "TRN602") == []
    # no training step between train() and the loop: a deliberate train-mode pass, as before
    scoring_only = TRAINER.replace("            self.train_step(batch)\n", "")
    model = FileModel(cst.parse_module(textwrap.dedent(scoring_only)))
    assert model.fact(FileFacts).mode_set_for(_held_loop(model))


SAMPLES = """
import torch

class AudioTrainer:
    def train_step(self, steps):
        self.codec_model.train()
        loss = self.codec_model(next(self.train_dl_iter)).mean()
        loss.backward()
        self.optim.step()
        if steps % 1000 == 0:
            for net, name in ((self.ema_model, "ema"), (self.codec_model, "raw")):
                net.eval()
                wave, = next(self.valid_dl_iter)
                recons = net(wave)
                save(recons.detach().cpu(), name)
"""


def test_a_held_out_batch_scored_after_eval_is_a_measurement() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(SAMPLES)))
    facts = model.fact(FileFacts)
    code = cst.Module([]).code_for_node
    found = {code(c.func): facts.held_out_batch_after_eval(c) for c in model.nodes(cst.Call) if facts.is_model_call(c)}
    # next(self.valid_dl_iter): an iterator made elsewhere, told by its spelling
    assert {k: code(v) for k, v in found.items() if v is not None} == {"net": "self.valid_dl_iter"}
    assert _findings(SAMPLES, "TRN601") == [(14, "certain")]


def test_a_held_out_batch_that_trains_or_comes_before_eval_is_no_measurement() -> None:
    trained = SAMPLES.replace("                save(recons.detach().cpu(), name)\n",
                              "                recons.mean().backward()\n")
    no_eval = SAMPLES.replace("                net.eval()\n", "")
    for source in (trained, no_eval):
        assert source != SAMPLES
        model = FileModel(cst.parse_module(textwrap.dedent(source)))
        facts = model.fact(FileFacts)
        assert not any(facts.held_out_batch_after_eval(c) for c in model.nodes(cst.Call))
    quiet = SAMPLES.replace("                recons = net(wave)", "                with torch.no_grad():\n"
                            "                    recons = net(wave)")
    assert _findings(quiet, "TRN601") == []
