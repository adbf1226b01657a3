"""What a function hands out: whether anything computed from its model calls leaves it with a gradient
(analysis/evaluation.py, FileFacts.hands_out_gradient), and the inference loops and evaluation steps
built on it (FileFacts.inference_loop_calls, FileFacts.evaluation_step_call)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

def speech_windows(wave, net, step=512):
    probs = []
    for start in range(0, wave.shape[-1], step):
        piece = wave[start:start + step]
        probs.append(net(piece).item())
    return [p > 0.5 for p in probs]

def greedy_text(decoder: nn.Module, vocab, prefix, n):
    ids = prefix
    words = []
    while len(words) < n:
        logits = decoder(ids)
        nxt = logits[:, -1].argmax(-1)
        ids = torch.cat([ids, nxt[:, None]], 1)
        words.append(vocab[nxt.item()])
    return " ".join(words)

def stream_tokens(lm_net, ids, n):
    for _ in range(n):
        scores = F.log_softmax(lm_net(ids)[:, -1], -1)
        best, token = scores.topk(1)
        ids = torch.cat([ids, token], 1)
        yield token, torch.log(best.detach().exp())

def returns_logits(encoder: nn.Module, batches):
    outs = []
    for i in range(len(batches)):
        outs.append(encoder(batches[i]))
    return outs

def keeps_on_self(self, model, items):
    for k in range(len(items)):
        self.last = model(items[k])
    return len(items)

def logs_it(self, model, items):
    for k in range(len(items)):
        loss = model(items[k]).mean()
        self.log("val_loss", loss)
    return 0

def feeds_parameter(model, items, sink):
    for k in range(len(items)):
        sink[k] = model(items[k])
    return None

def fills_local(model, items):
    found = {}
    for k in range(len(items)):
        found[k] = model(items[k])
    return found

def shape_probe(backbone_model):
    return backbone_model(torch.zeros(1, 3, 32, 32)).shape[-1]

def to_array(detector: nn.Module, frames):
    boxes = []
    for j in range(len(frames)):
        boxes.append(detector(frames[j]).cpu().numpy())
    return boxes

def max_indices(tagger_net, sents):
    tags = []
    for q in range(len(sents)):
        tags.append(tagger_net(sents[q]).max(-1)[1].tolist())
    return tags

def rescored(lm_net, ids, n, **options):
    for _ in range(n):
        out = lm_net(ids, **options)
        options["cache"] = out.cache
        options.pop("warmup", None)
        probs = out.logits[:, -1].softmax(-1)
        probs = torch.log(probs.detach())
        ids = torch.cat([ids, probs.argmax(-1, keepdim=True)], 1)
        yield ids, probs

def maybe_detached(net, xs, flag):
    for i in range(len(xs)):
        y = net(xs[i])
        if flag:
            y = y.detach()
        yield y.sum()

def closure_keeps(net, xs):
    out = net(xs[0])
    return lambda: out
"""


def _facts(src: str = _SRC) -> tuple[FileModel, FileFacts, dict[str, cst.FunctionDef]]:
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    functions = {fn.name.value: fn for fn in model.nodes(cst.FunctionDef)}
    return model, model.fact(FileFacts), functions


def test_functions_that_hand_out_only_numbers_indices_or_strings_hand_out_no_gradient() -> None:
    _, facts, functions = _facts()
    handed = {name: facts.hands_out_gradient(fn) for name, fn in functions.items()}
    # `.item()` then a comparison, a token chosen by argmax turned into words, yielded indices and a
    # detached score, index halves of max(): nothing differentiable leaves
    assert handed["speech_windows"] is False
    assert handed["greedy_text"] is False
    assert handed["stream_tokens"] is False
    assert handed["max_indices"] is False
    # a name rebound to a detached value holds no graph from there on; `**options` is this call's own dict
    assert handed["rescored"] is False


def test_an_output_that_leaves_with_its_graph_is_handed_out() -> None:
    _, facts, functions = _facts()
    # returned (also through a local container), stored on self or in a parameter, handed to a call
    # that may keep it, or captured by a closure
    for name in ("returns_logits", "keeps_on_self", "logs_it", "feeds_parameter", "fills_local", "closure_keeps",
                 "maybe_detached"):  # detached on one branch only
        assert facts.hands_out_gradient(functions[name]) is True, name


def test_shape_probes_and_arrays_leave_the_question_open() -> None:
    _, facts, functions = _facts()
    # only the shape is read (a constructor's probe); `.numpy()` raises on a graph, so grad is off there
    assert facts.hands_out_gradient(functions["shape_probe"]) is None
    assert facts.hands_out_gradient(functions["to_array"]) is None


def test_inference_loops_feed_the_model_what_the_target_picks_or_its_own_output() -> None:
    model, facts, functions = _facts()
    looping = {name: bool(facts.inference_loop_calls(loop))
               for name, fn in functions.items()
               for loop in (model.within(cst.For, fn) + model.within(cst.While, fn))[:1]}
    assert {name for name, found in looping.items() if found} == {
        "speech_windows", "greedy_text", "stream_tokens", "max_indices", "rescored"}


def test_a_loop_that_trains_or_runs_the_same_input_is_no_inference_loop() -> None:
    model, facts, functions = _facts("""
        import torch

        def fit_scores(net, xs, opt):
            total = 0.0
            for i in range(len(xs)):
                loss = net(xs[i]).mean()
                loss.backward()
                opt.step()
                total += loss.item()
            return total

        def timing(net, x, n):
            took = []
            for _ in range(n):
                took.append(net(x).sum().item())
            return took

        def each_architecture(names, image):
            for arch in names:
                model = build(arch)
                model.eval()
                print(arch, model(prepare(image, model)).argmax().item())

        from chat_client import query_chat_model
        def ask_all(prompts):
            answers = []
            for k in range(len(prompts)):
                answers.append(len(query_chat_model(prompts[k])))
            return answers
        """)
    # a model built anew in each iteration runs once per model; a function named like a model is no module
    for name in ("fit_scores", "timing", "each_architecture", "ask_all"):
        [loop] = model.within(cst.For, functions[name])
        assert facts.inference_loop_calls(loop) == [], name


def test_evaluation_steps_run_a_handed_batch_and_hand_out_numbers() -> None:
    model, facts, functions = _facts("""
        import torch

        def evaluate_batch(net, batch, criterion):
            feats, target = batch
            scores = net(feats.cuda())
            loss = criterion(scores, target)
            hits = (scores.argmax(1) == target).sum()
            return float(loss), hits.item()

        def ValidationStep(scoring_model, sample):
            out = scoring_model(sample["x"])
            return out.mean().item()

        def evaluate_loss(net, batch, criterion):
            return criterion(net(batch[0]), batch[1])

        def summarize(net, batch):
            return net(batch).sum().item()

        def validation_probe(net):
            return net(torch.zeros(2, 8)).sum().item()

        class Finder:
            def detect_faces(self, frame, out_file):
                crops = []
                crops.append(to_tensor(frame))
                boxes = self.net(torch.stack(crops))
                for b in boxes:
                    out_file.write(" ".join(str(int(v)) for v in b.tolist()))
        """)
    stepping = {name: any(facts.evaluation_step_call(c) for c in model.within(cst.Call, fn))
                for name, fn in functions.items()}
    # a loss handed back may be trained on; `summarize` is not named for evaluating; a constant input is a probe
    # a detection method fed what a parameter hands it through a list counts too
    assert stepping == {"evaluate_batch": True, "ValidationStep": True, "evaluate_loss": False,
                        "summarize": False, "validation_probe": False, "detect_faces": True}


def test_a_step_repeats_when_named_for_evaluating_or_called_inside_a_loop() -> None:
    model, facts, functions = _facts("""
        import torch

        def evaluate_batch(net, batch):
            return net(batch).argmax(1).tolist()

        def predict_label(net, sentence):
            return int(net(encode(sentence)).argmax())

        def predict_tags(net, sentence):
            return net(encode(sentence)).argmax(-1).tolist()

        class Finder:
            def detect(self, image):
                return self.net(image).argmax().item()

        for s in sentences:
            predict_tags(model, s)
        finder = Finder()
        while frames:
            finder.detect(frames.pop())
        """)
    repeated = {name for name, fn in functions.items() if facts.repeated_step(fn)}
    # predict_label runs once, wherever it is called from: a one-off prediction
    assert repeated == {"evaluate_batch", "predict_tags", "detect"}
