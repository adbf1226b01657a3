"""Loops that take their data inside rather than from their iterable: a counting loop (also
wrapped in a progress bar) or a ``while`` loop that fetches a batch, or a counting loop that
indexes data by its target (analysis/evaluation.py, FileFacts.fetches_data)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
from tqdm import tqdm

def by_index(net, test_set):
    for idx in tqdm(range(len(test_set))):
        mix, ref = to_device(test_set[idx], device="cuda")
        net(mix[None])

def by_batcher(self, batcher):
    while not batcher.last_batch():
        batch = batcher.next_batch()
        self.model(batch)

def by_position(net, samples, step):
    for i in trange(0, len(samples), step):
        chunk = samples[i:i + step]
        net(chunk)

def layers_by_index(self, x):
    for i in range(len(self.blocks)):
        x = self.blocks[i](x)

def data_not_by_target(net, test_set, n):
    for k in range(n):
        first = test_set[0]
        net(first)

def polling(net, queue):
    while queue.alive():
        item = queue.get()
        net(item)

def trains(net, dataset, opt):
    for i in range(len(dataset)):
        x, y = dataset[i]
        loss = net(x).sum()
        loss.backward()
        opt.step()
"""


def _loops() -> tuple[FileFacts, dict[str, cst.CSTNode]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(FileFacts)
    loops = {}
    for fn in model.nodes(cst.FunctionDef):
        loops[fn.name.value] = (model.within(cst.For, fn) + model.within(cst.While, fn))[0]
    return facts, loops


def test_loops_that_fetch_or_index_their_data_are_data_loops() -> None:
    facts, loops = _loops()
    fetching = {name for name, loop in loops.items() if facts.fetches_data(loop)}
    # layers picked by index are not data; neither is an item picked by a constant, nor a queue's
    # get() (its name says nothing of batches); a training loop fetches too (it is no evaluation)
    assert fetching == {"by_index", "by_batcher", "by_position", "trains"}
    assert all(facts.is_data_loop(loops[name]) for name in fetching)


def test_a_fetching_loop_that_only_calls_the_model_is_evaluation() -> None:
    facts, loops = _loops()
    scored = {name for name, loop in loops.items() if facts.evaluation_calls(loop)}
    assert scored == {"by_index", "by_batcher", "by_position"}


def test_a_model_loaded_with_from_pretrained_is_in_eval_mode() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        from transformers import AutoModel
        pretrained = AutoModel.from_pretrained("name").to("cuda")
        built = Net().to("cuda")
        pretrained(x)
        built(x)
        pretrained.forward(x)
        """)))
    facts = model.fact(FileFacts)
    calls = [c for c in model.nodes(cst.Call) if model.module.code_for_node(c).endswith("(x)")]
    assert [facts.loaded_in_eval_mode(c.func) for c in calls] == [True, False, True]
