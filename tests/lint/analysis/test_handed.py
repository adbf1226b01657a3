"""Models handed to a function that runs them (analysis/handed.py): which parameters a function runs
as a module, which arguments of a call those are (a function of this file or of another project file,
through its summary), and what TRN602 makes of a loop that runs its model that way."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from lint_rules import registry
from lint_rules.analysis.handed import HandedModels, run_parameters
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.summary import summarise_source
from lint_rules.engine import lint_source


def _model(source: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(source)))


def _runs(source: str) -> dict[str, list[tuple[int, str]]]:
    model = _model(source)
    return {fn.name.value: run_parameters(model, fn) for fn in model.nodes(cst.FunctionDef)}


def _findings(source: str, path: str = "t.py") -> list[tuple[int, str]]:
    """(line, confidence) of TRN602's findings with --preview."""
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), path, every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == "TRN602"]


HELPERS = """
def step_once(net, problem, batch):
    logits = net(batch)
    return logits, problem.loss(batch, logits)

def embed(tokens, *, encoder, pool=None):
    return pool(encoder.forward(tokens))

def score_all(scorer, batches):
    return [scorer(b) for b in batches]

def per_item(scorer, items):
    for item in items:
        scorer(item)

def rebound(net, x):
    net = build(net)
    return net(x)

def fit_once(net, batch, opt):
    net(batch).sum().backward()
    opt.step()

def switched(net, batch):
    net.eval()
    return net(batch)

class Runner:
    def go(self, x):
        return self(x)
"""


def test_the_parameters_a_function_runs_outside_loops_of_its_own() -> None:
    runs = _runs(HELPERS)
    assert runs["step_once"] == [(0, "net")]  # problem.loss() is a method of a parameter, not a run of it
    assert runs["embed"] == [(-1, "pool"), (-1, "encoder")]  # keyword-only; `.forward(x)` runs it too
    assert runs["per_item"] == []  # its own loop is judged where it is
    assert runs["rebound"] == []  # no longer what the caller handed over


def test_a_function_that_trains_or_sets_a_mode_runs_nothing_handed_over() -> None:
    runs = _runs(HELPERS)
    assert runs["fit_once"] == [] and runs["switched"] == [] and runs["go"] == []


def test_the_arguments_a_call_hands_to_a_parameter_that_runs() -> None:
    model = _model(HELPERS + """
for i, b in enumerate(stream):
    step_once(detector, task, b)
    step_once(problem=task, batch=b, net=self_net)
    embed(b, encoder=text_enc)
    step_once(*args)
""")
    handed = model.fact(HandedModels)
    loop = model.nodes(cst.For)[-1]
    assert [(cst.Module([]).code_for_node(call.func), cst.Module([]).code_for_node(arg))
            for call, arg in handed.in_loop(loop)] == [
        ("step_once", "detector"), ("step_once", "self_net"), ("embed", "text_enc")]


def test_the_summary_records_the_parameters_each_function_runs() -> None:
    assert summarise_source(textwrap.dedent(HELPERS))["runs"] == {
        "step_once": [[0, "net"]], "embed": [[-1, "pool"], [-1, "encoder"]], "score_all": [[0, "scorer"]]}


# An inference script: it restores the weights and scores the test problem through a helper.
SCRIPT = """
import torch
from factory import build_model
{imports}

{helper}

if __name__ == "__main__":
    model = build_model(cfg)
    model.load_state_dict(torch.load(path))
    {switch}
    with torch.no_grad():
        for episode, (data, aux) in enumerate(problem.generator()):
            logits, loss = step_once(model, problem, data)
            log(loss)
"""
_STEP = "def step_once(net, problem, batch):\n    logits = net(batch)\n    return logits, problem.loss(batch, logits)"


def test_trn602_an_inference_script_scoring_its_restored_model_through_a_helper() -> None:
    buggy = SCRIPT.format(imports="", helper=_STEP, switch="")
    assert _findings(buggy) == [(15, "certain")]
    assert _findings(SCRIPT.format(imports="", helper=_STEP, switch="model.eval()")) == []
    # the helper switches the mode itself, or trains: no run of a model handed over
    assert _findings(SCRIPT.format(imports="", helper=_STEP.replace("    logits", "    net.eval()\n    logits", 1),
                                   switch="")) == []


def test_trn602_the_helper_in_another_file_of_the_project(tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(_STEP + "\n")
    (tmp_path / "other.py").write_text("def step_once(net, problem, batch):\n    return net.loss(batch)\n")
    script = tmp_path / "test.py"
    assert _findings(SCRIPT.format(imports="from steps import step_once", helper="", switch=""),
                     str(script)) == [(13, "certain")]
    # a function of the same name that runs nothing handed over: no model runs in the loop
    assert _findings(SCRIPT.format(imports="from other import step_once", helper="", switch=""),
                     str(script)) == []


def test_trn602_a_validation_loop_handing_the_trained_model_to_a_helper() -> None:
    source = """
    import torch
    from torch import nn

    def predict(net, x):
        return net(x).argmax(1)

    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for x, y in train_loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    for x, y in val_loader:
        correct += (predict(model, x) == y).sum()
    """
    assert _findings(source) == [(15, "certain")]
    assert _findings(source.replace("    for x, y in val_loader:", "    model.eval()\n    for x, y in val_loader:")) == []


def test_trn602_a_validation_loop_handing_the_trained_model_to_another_files_helper(tmp_path: Path) -> None:
    (tmp_path / "metrics.py").write_text("def top1(classifier, images):\n    return classifier(images).argmax(1)\n")
    source = """
    import torch
    from torch import nn
    from metrics import top1

    clf = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.LazyLinear(10))
    sgd = torch.optim.SGD(clf.parameters(), lr=0.1)
    clf.train()
    for images, labels in train_loader:
        sgd.zero_grad()
        nn.functional.cross_entropy(clf(images), labels).backward()
        sgd.step()
    for images, labels in test_loader:
        hits += (top1(clf, images) == labels).sum()
    """
    assert _findings(source, str(tmp_path / "main.py")) == [(13, "certain")]
    fixed = source.replace("    for images, labels in test_loader:", "    clf.eval()\n    for images, labels in test_loader:")
    assert _findings(fixed, str(tmp_path / "main.py")) == []


# A training script that scores one validation batch every few steps through a helper.
PERIODIC = """
import torch
from torch import nn

def check(net, task, xs, ys):
    {switch}
    with torch.no_grad():
        return task.metric(net(xs), ys)

model = build(cfg)
sgd = torch.optim.Adam(model.parameters())
valid_feed = task.make_generator("valid")
vx, vy = next(valid_feed)
for step, (x, y) in enumerate(train_loader):
    sgd.zero_grad()
    task.loss(model(x), y).backward()
    sgd.step()
    if step % 100 == 0:
        score = check(model, task, vx, vy)
"""


def test_helper_scores_pairs_the_model_run_with_grad_off_and_its_inputs() -> None:
    model = _model(PERIODIC.format(switch=""))
    handed = model.fact(HandedModels)
    call = next(c for c in model.nodes(cst.Call) if cst.Module([]).code_for_node(c.func) == "check")
    code = cst.Module([]).code_for_node
    assert [(code(net), code(batch)) for net, batch in handed.helper_scores(call)] == [("model", "vx")]
    assert handed.helper_scores(_model(PERIODIC.format(switch="net.eval()")).nodes(cst.Call)[0]) == []


def test_trn602_a_held_out_batch_scored_by_a_helper_inside_the_training_loop() -> None:
    assert _findings(PERIODIC.format(switch="")) == [(19, "certain")]
    # the helper switches to eval mode itself: nothing to report
    assert _findings(PERIODIC.format(switch="net.eval()")) == []
    # a training batch drawn the same way is no held-out data
    assert _findings(PERIODIC.format(switch="").replace("valid_feed", "feed")) == []


def test_trn602_a_helper_scored_batch_is_certain_only_for_the_model_the_loop_trains_in_a_file_without_eval() -> None:
    # an eval() elsewhere in the file may have switched it: possible
    elsewhere = PERIODIC.format(switch="") + "\ndef export(m):\n    m.eval()\n"
    assert _findings(elsewhere) == [(19, "possible")]
    # the loop trains another model than the one scored: possible
    other = PERIODIC.format(switch="").replace("task.loss(model(x), y)", "task.loss(student(x), y)")
    assert _findings(other) == [(19, "possible")]


PAIRED = """
import torch

def {trainer}(net, pairs, epochs):
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    {start}
    for _ in range(epochs):
        for src, tgt in pairs:
            sgd.zero_grad()
            net(src, tgt).sum().backward()
            sgd.step()
    {end}

def {predictor}(net, sentence, tokenizer, steps):
    ids = tokenizer.encode(sentence)
    state = net.encoder(ids)
    tokens = []
    for _ in range(steps):
        out, state = net.decoder(ids, state)
        tokens.append(out.argmax())
    return tokenizer.decode(tokens)
"""


def _paired(trainer="train_seq2seq", predictor="predict_seq2seq", start="net.train()", end="") -> FileModel:
    return _model(PAIRED.format(trainer=trainer, predictor=predictor, start=start, end=end))


def _fn(model: FileModel, name: str) -> cst.FunctionDef:
    return next(fn for fn in model.nodes(cst.FunctionDef) if fn.name.value == name)


def test_a_training_function_that_ends_in_train_mode_leaves_its_model_training() -> None:
    model = _paired()
    assert [(fn.name.value, p) for fn, p in model.fact(HandedModels).leaves_training()] == [("train_seq2seq", "net")]
    # evaluated at the end (or never switched at all): no model left in training mode
    assert _paired(end="net.eval()").fact(HandedModels).leaves_training() == []
    assert _paired(start="").fact(HandedModels).leaves_training() == []
    # the caller's mode put back: whatever it was
    assert _paired(start="was = net.training\n    net.train()", end="net.train(was)").fact(
        HandedModels).leaves_training() == []
    assert len(_paired(end="net.train(True)").fact(HandedModels).leaves_training()) == 1
    # a step of a caller of this file, which may evaluate afterwards: not the model's last word
    called = _model(PAIRED.format(trainer="train_epoch", predictor="predict", start="net.train()", end="")
                    + "\ndef train(net, pairs):\n    train_epoch(net, pairs, 1)\n    net.eval()\n")
    assert called.fact(HandedModels).leaves_training() == []


def test_the_inference_function_paired_with_a_trainer_by_name_and_the_calls_that_run_its_model() -> None:
    model = _paired()
    handed = model.fact(HandedModels)
    predictor = _fn(model, "predict_seq2seq")
    assert handed.paired_trainer(predictor, "net") is _fn(model, "train_seq2seq")
    # the trainer's model is another parameter than the one the inference function runs
    assert handed.paired_trainer(predictor, "model") is None
    code = cst.Module([]).code_for_node
    # the model's parts run; the tokenizer (no module) is no model
    assert [(code(c.func), p) for c, p in handed.inference_runs(predictor)] == [
        ("net.encoder", "net"), ("net.decoder", "net")]
    # other spellings of the pair: fit/predict, train_tagger/infer_tagger
    fitted = _paired(trainer="fit", predictor="predict")
    assert fitted.fact(HandedModels).paired_trainer(_fn(fitted, "predict"), "net") is _fn(fitted, "fit")
    tagger = _paired(trainer="train_tagger", predictor="inference_tagger")
    assert tagger.fact(HandedModels).paired_trainer(_fn(tagger, "inference_tagger"), "net") is not None
    # another model's trainer: no pair
    other = _paired(trainer="train_classifier", predictor="predict_seq2seq")
    assert other.fact(HandedModels).paired_trainer(_fn(other, "predict_seq2seq"), "net") is None


def test_an_inference_function_that_sets_a_mode_runs_nothing_in_the_left_mode() -> None:
    switched = _model(PAIRED.format(trainer="train_seq2seq", predictor="predict_seq2seq", start="net.train()",
                                    end="").replace("    ids = tokenizer", "    net.eval()\n    ids = tokenizer"))
    assert switched.fact(HandedModels).inference_runs(_fn(switched, "predict_seq2seq")) == []


def test_trn602_an_inference_function_after_its_paired_trainer_left_the_model_training() -> None:
    source = PAIRED.format(trainer="train_seq2seq", predictor="predict_seq2seq", start="net.train()", end="")
    assert _findings(source) == [(16, "certain")]
    assert _findings(PAIRED.format(trainer="train_seq2seq", predictor="predict_seq2seq", start="net.train()",
                                   end="net.eval()")) == []
    assert _findings(PAIRED.format(trainer="train_classifier", predictor="predict_seq2seq", start="net.train()",
                                   end="")) == []
    # the trainer trains another parameter than the model the inference function is handed
    renamed = source.replace("(net, pairs", "(decoder, pairs").replace("net.train()", "decoder.train()") \
        .replace("net(src", "decoder(src").replace("net.parameters", "decoder.parameters")
    assert _findings(renamed) == []
    # a caller of this file switching to eval mode first
    called = source + "\ndef demo(net, tok):\n    net.eval()\n    return predict_seq2seq(net, 'hi', tok, 5)\n"
    assert _findings(called) == []
