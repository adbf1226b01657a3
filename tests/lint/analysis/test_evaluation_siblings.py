"""Evaluation loops told by their place or their spelling (analysis/evaluation.py): a top-level loop
that scores the model an earlier loop of the same function trains, whatever it iterates; and a
held-out split's collection, however it is spelled (``testing_graphs``, ``dev_pairs``)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch

def one_epoch(network, crit, opt, feed, held):
    for batch in feed:
        opt.zero_grad()
        crit(network(batch[0]), batch[1]).backward()
        opt.step()
    with torch.no_grad():
        for batch in held:
            probe(batch)
            out = network(batch[0])
            for part in batch:
                network(part)

def two_passes(network, crit, opt, feed, more):
    for batch in feed:
        opt.zero_grad()
        crit(network(batch[0]), batch[1]).backward()
        opt.step()
    for batch in more:
        opt.zero_grad()
        crit(network(batch[0]), batch[1]).backward()
        opt.step()

def scored_first(network, feed, held):
    for batch in held:
        network(batch)
    for batch in feed:
        network(batch).sum().backward()

def other_model(network, judge, crit, opt, feed, held):
    for batch in feed:
        crit(network(batch[0]), batch[1]).backward()
        opt.step()
    for batch in held:
        judge(batch)

class Runner:
    def score(self):
        for pair in tqdm(self.testing_graphs):
            self.model(pair)

    def rank(self, dev_pairs, evaluation_set, contest):
        for pair in dev_pairs:
            self.model(pair)
        for pair in evaluation_set:
            self.model(pair)
        for pair in contest:
            self.model(pair)
"""


def _loops() -> tuple[FileModel, FileFacts, dict[str, list[cst.For]]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    loops: dict[str, list[cst.For]] = {}
    for loop in model.nodes(cst.For):
        fn = model.enclosing_function(loop)
        loops.setdefault(fn.name.value, []).append(loop)
    return model, model.fact(FileFacts), loops


def _called(facts: FileFacts, loop: cst.For) -> list[str]:
    return [cst.Module([]).code_for_node(c.func) for c in facts.evaluation_calls(loop)]


def test_a_loop_after_the_training_loop_of_its_function_scores_the_model_it_trains() -> None:
    _, facts, loops = _loops()
    train, held, inner = loops["one_epoch"]
    assert _called(facts, train) == []
    # network(batch[0]) only: probe() is not the trained model, and the nested loop's call is its own
    assert _called(facts, held) == ["network"]


@pytest.mark.parametrize(("function", "index"), [
    ("two_passes", 1),    # a second training pass
    ("scored_first", 0),  # before the training loop: nothing trained yet in this function
    ("other_model", 1),   # a model the training loop does not train
])
def test_near_misses_are_not_evaluation(function: str, index: int) -> None:
    _, facts, loops = _loops()
    assert _called(facts, loops[function][index]) == []


def test_held_out_splits_are_data_however_they_are_spelled() -> None:
    _, facts, loops = _loops()
    assert _called(facts, loops["score"][0]) == ["self.model"]
    dev, evaluation, contest = loops["rank"]
    assert _called(facts, dev) == ["self.model"] and _called(facts, evaluation) == ["self.model"]
    assert _called(facts, contest) == []  # "contest" holds "test" but is no split's name
