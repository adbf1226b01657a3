"""Models that a file trains (or restores from a checkpoint) and never switches to eval mode
(analysis/evaluation.py ``trained_never_evaluated``, ``trained_by_callers``, ``restored_for_inference``),
a stray ``zero_grad()`` in a loop whose model calls all run under ``no_grad()``, and a caller's
``train()`` before a function that trains and then validates; with what TRN601 and TRN602 make of them."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules import registry
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.engine import lint_source


def _facts(source: str) -> tuple[FileModel, FileFacts]:
    model = FileModel(cst.parse_module(textwrap.dedent(source)))
    return model, model.fact(FileFacts)


def _loops(model: FileModel, name: str | None) -> list[cst.For]:
    """The ``for`` loops of the function ``name`` (None: the module's body), in order."""
    out = []
    for loop in model.nodes(cst.For):
        fn = model.enclosing_function(loop)
        if (fn.name.value if isinstance(fn, cst.FunctionDef) else None) == name:
            out.append(loop)
    return out


def _spelled(calls: list[cst.Call]) -> list[str]:
    return [cst.Module([]).code_for_node(c.func) for c in calls]


def _findings(source: str, code: str) -> list[tuple[int, str]]:
    """(line, confidence) of ``code``'s findings with --preview."""
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == code]


# Two passes in one function: the second scores the detector_net the first trains, with a stray
# zero_grad() beside the model call, both under no_grad().
SIBLINGS = """
import torch

def one_epoch(detector_net, crit, opt, feed, held_feed):
    for step, batch in enumerate(feed):
        opt.zero_grad()
        crit(detector_net(batch[0]), batch[1]).backward()
        opt.step()
    for step, batch in enumerate(held_feed):
        with torch.no_grad():
            opt.zero_grad()
            total = crit(detector_net(batch[0]), batch[1])

def graded(detector_net, crit, opt, feed, held_feed):
    for step, batch in enumerate(feed):
        opt.zero_grad()
        crit(detector_net(batch[0]), batch[1]).backward()
        opt.step()
    for step, batch in enumerate(held_feed):
        opt.zero_grad()
        total = crit(detector_net(batch[0]), batch[1])
        helper_that_may_step(total, opt)

detector_net = build().train()
one_epoch(detector_net, crit, opt, feed, held_feed)
"""


def test_a_stray_zero_grad_beside_model_calls_under_no_grad_is_no_training_step() -> None:
    model, facts = _facts(SIBLINGS)
    _, scored = _loops(model, "one_epoch")
    assert _spelled(facts.evaluation_calls(scored)) == ["detector_net"]
    # with grad on, the zero_grad() prepares a step a helper may take: not an evaluation loop
    _, maybe_training = _loops(model, "graded")
    assert facts.evaluation_calls(maybe_training) == []


def test_a_callers_train_is_the_training_s_own_mode_when_the_function_trains_first() -> None:
    model, facts = _facts(SIBLINGS)
    _, scored = _loops(model, "one_epoch")
    # `detector_net = build().train()` before the call is no deliberate train-mode pass over held_feed
    assert not facts.mode_set_for(scored)
    # a function that only scores keeps the old reading: train() just before it is deliberate
    model, facts = _facts("""
        import torch
        def refresh_statistics(net, feed):
            with torch.no_grad():
                for batch in feed:
                    net(batch)
        net.train()
        refresh_statistics(net, feed)
        """)
    assert facts.mode_set_for(_loops(model, "refresh_statistics")[0])


def test_the_model_an_earlier_loop_trains_is_never_evaluated_in_a_file_without_eval() -> None:
    model, facts = _facts(SIBLINGS)
    _, scored = _loops(model, "one_epoch")
    assert _spelled(facts.trained_never_evaluated(scored, facts.evaluation_calls(scored))) == ["detector_net"]
    # any eval()-like call in the file, on whatever, and the file may switch it: nothing certain
    for switch in ("detector_net.eval()", "other.train(False)", "set_eval_mode(detector_net)", "head.train(flag)"):
        model, facts = _facts(SIBLINGS + switch + "\n")
        _, scored = _loops(model, "one_epoch")
        assert facts.trained_never_evaluated(scored, facts.evaluation_calls(scored)) == [], switch


TRAINER_CLASS = """
import torch

class GraphTrainer:
    def fit(self):
        self.opt = torch.optim.Adam(self.scoring_net.parameters())
        self.scoring_net.train()
        for pair in self.training_pairs:
            self.opt.zero_grad()
            self.scoring_net(pair).sum().backward()
            self.opt.step()

    def measure(self):
        results = []
        for pair in tqdm(self.testing_pairs):
            results.append(self.scoring_net(pair).item())
        return results
"""


def test_a_method_scores_the_module_another_method_put_in_train_mode() -> None:
    model, facts = _facts(TRAINER_CLASS)
    scored = _loops(model, "measure")[0]
    assert _spelled(facts.trained_never_evaluated(scored, facts.evaluation_calls(scored))) == ["self.scoring_net"]
    assert _findings(TRAINER_CLASS, "TRN602") == [(15, "certain")]
    # a module never put in train mode here, only called: nothing known about its mode
    quiet = TRAINER_CLASS.replace("        self.scoring_net.train()\n", "")
    assert _findings(quiet, "TRN602") == [(14, "possible")]


CALLERS = """
import torch

def run_epoch(net, crit, opt, loader):
    for x, y in loader:
        opt.zero_grad()
        crit(net(x), y).backward()
        opt.step()

def accuracy(clf_model, held_loader):
    hits = 0
    with torch.no_grad():
        for x, y in held_loader:
            hits += (clf_model(x).argmax(1) == y).sum().item()
    return hits

def main():
    lstm = build()
    for epoch in range(10):
        run_epoch(lstm, crit, opt, train_loader)
        accuracy(lstm, test_loader)
"""


def test_a_caller_hands_over_the_model_a_function_of_this_file_just_trained() -> None:
    model, facts = _facts(CALLERS)
    fn = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "accuracy")
    assert facts.trained_by_callers(fn) == {"clf_model"}
    # the training function receives it too, but nothing trains before its own calls
    trainer = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "run_epoch")
    assert facts.trained_by_callers(trainer) == set()
    assert _findings(CALLERS, "TRN602") == [(13, "certain")]


def test_a_model_the_caller_scores_before_training_it_is_not_known_to_be_trained() -> None:
    first = CALLERS.replace("""        run_epoch(lstm, crit, opt, train_loader)
        accuracy(lstm, test_loader)""", """        accuracy(lstm, test_loader)
        run_epoch(lstm, crit, opt, train_loader)""")
    model, facts = _facts(first)
    fn = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "accuracy")
    assert facts.trained_by_callers(fn) == set()
    assert _findings(first, "TRN602") == [(13, "possible")]


RESTORED = """
import torch

tagger = Factory.build(config)
tagger.load_state_dict(torch.load(path, map_location="cpu"))
for episode, (inputs, targets) in enumerate(task.episodes()):
    outputs = tagger(inputs)
    report(outputs, targets)
"""


def test_a_script_that_restores_weights_and_trains_nothing_runs_them_for_inference() -> None:
    model, facts = _facts(RESTORED)
    loop = _loops(model, None)[0]
    assert facts.restored_for_inference(loop) == {"tagger"}
    assert _spelled(facts.evaluation_calls(loop)) == ["tagger"]
    assert _findings(RESTORED, "TRN601") == [(6, "certain")]
    assert _findings(RESTORED, "TRN602") == [(6, "certain")]


def test_a_pickled_module_is_restored_but_keeps_the_mode_it_was_saved_in() -> None:
    pickled = RESTORED.replace("tagger = Factory.build(config)\ntagger.load_state_dict(torch.load(path, "
                               "map_location=\"cpu\"))", "tagger = torch.load(path)")
    model, facts = _facts(pickled)
    loop = _loops(model, None)[0]
    assert facts.restored_for_inference(loop) == {"tagger"}
    assert facts.restored_for_inference(loop, state_dict_only=True) == set()
    assert _findings(pickled, "TRN601") == [(5, "certain")]
    assert _findings(pickled, "TRN602") == [(5, "possible")]


def test_a_file_that_trains_restores_nothing_for_inference() -> None:
    # resuming a checkpoint to train on: an optimizer built anywhere in the file
    resumed = RESTORED + "opt = torch.optim.SGD(tagger.parameters(), lr=0.1)\n"
    model, facts = _facts(resumed)
    loop = _loops(model, None)[0]
    assert facts.restored_for_inference(loop) == set()
    assert facts.evaluation_calls(loop) == []
    # the input does not come from the loop: an iteration count, not data
    unrelated = RESTORED.replace("outputs = tagger(inputs)", "outputs = tagger(fixed_input)")
    model, facts = _facts(unrelated)
    assert facts.evaluation_calls(_loops(model, None)[0]) == []


HELPER_CLEARS = """
import torch
from torch import nn

class Tagger(nn.Module):
    def forward(self, sentences):
        self.zero_grad()
        return self.proj(self.embed(sentences))

    def _scores_of(self, chunk):
        return self.forward(chunk).softmax(-1)

    def predict(self, sentences, size=32):
        batches = [sentences[i:i + size] for i in range(0, len(sentences), size)]
        for chunk in batches:
            self._scores_of(chunk)
"""


def test_a_module_clearing_its_own_gradients_prepares_no_training_step() -> None:
    model, facts = _facts(HELPER_CLEARS)
    loop = _loops(model, "predict")[0]
    assert [_spelled([inner]) for _, inner in facts.evaluation_helper_calls(loop)] == [["self.forward"]]
    assert _findings(HELPER_CLEARS, "TRN601") == [(15, "certain")]
    # an optimizer's zero_grad() in the helper: a training step whose backward we cannot see
    stepping = HELPER_CLEARS.replace("        return self.forward(chunk).softmax(-1)",
                                     "        self.opt.zero_grad()\n        return self.forward(chunk).softmax(-1)")
    model, facts = _facts(stepping)
    assert facts.evaluation_helper_calls(_loops(model, "predict")[0]) == []


WRAPPER = """
import torch

class Segmenter:
    def __init__(self, weights):
        self.backbone_net = build_backbone()
        self.backbone_net.load_state_dict(torch.load(weights))

    def segment(self, image):
        batch = torch.from_numpy(image)[None]
        masks = self.backbone_net(batch)
        return masks.argmax(1).cpu().numpy()
"""


def _model_calls(model: FileModel) -> list[cst.Call]:
    facts = model.fact(FileFacts)
    return [c for c in model.nodes(cst.Call) if facts.is_model_call(c)]


def test_an_inference_wrapper_runs_the_weights_another_method_restored() -> None:
    model, facts = _facts(WRAPPER)
    assert [facts.restored_model_run(c) for c in _model_calls(model)] == [True]
    assert _findings(WRAPPER, "TRN601") == [(11, "certain")]
    quiet = WRAPPER.replace("    def segment(self, image):", "    @torch.no_grad()\n    def segment(self, image):")
    assert _findings(quiet, "TRN601") == []


def test_a_one_shot_run_or_a_file_that_trains_is_no_inference_wrapper() -> None:
    # restored and run in the same function: a script's single pass, its graph dies with it
    once = """
        import torch
        net = build()
        net.load_state_dict(torch.load(path))
        out = net(image)
        """
    model, facts = _facts(once)
    assert [facts.restored_model_run(c) for c in _model_calls(model)] == [False]
    # resuming to train: an optimizer anywhere in the file
    resumed = WRAPPER + "\n    def tune(self):\n        self.opt = torch.optim.Adam(self.backbone_net.parameters())\n"
    model, facts = _facts(resumed)
    assert [facts.restored_model_run(c) for c in _model_calls(model)] == [False]
