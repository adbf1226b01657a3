"""Evaluation declared by ``eval()``: which modules a function put in eval mode, loops indexed by
their target, ``model.forward(x)`` as a model call (analysis/evaluation.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts, forward_target, names_in
from lint_rules.analysis.model import FileModel

_SRC = """
import torch

def score(self, feats, env, step):
    self.head.eval()
    net.train(False)
    helper.eval()
    helper.train()
    for i in range(0, len(feats), step):
        piece = feats[i:i + step]
        self.head(piece)
        self.head.forward(piece)
        net(other)
    obs = env.reset()
    for _ in range(3):
        obs = env.step(self.head(obs))
"""


def _facts() -> tuple[FileModel, FileFacts, list[cst.For]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    return model, model.fact(FileFacts), list(model.nodes(cst.For))


def test_eval_receivers_are_the_modules_left_in_eval_mode_before_the_loop() -> None:
    model, facts, loops = _facts()
    # helper.eval() is undone by helper.train(); net.train(False) is eval mode
    assert facts.eval_receivers(loops[0]) == {"self.head", "net"}
    first_eval = next(iter(model.nodes(cst.Call)))  # self.head.eval() itself
    assert facts.eval_receivers(first_eval) == set()


def test_an_index_loop_after_eval_is_an_evaluation_loop_and_an_environment_loop_is_not() -> None:
    model, facts, loops = _facts()
    calls = facts.evaluation_calls(loops[0])
    # the module called with data sliced by the index, also through .forward; not net(other)
    assert [cst.Module([]).code_for_node(c.func) for c in calls] == ["self.head", "self.head.forward"]
    assert facts.evaluation_calls(loops[1]) == []  # fed by env.step, not by the loop's target


def test_forward_target_and_names_in() -> None:
    call = cst.parse_expression("self.model.forward(x[i], h)")
    assert cst.Module([]).code_for_node(forward_target(call.func)) == "self.model"
    assert forward_target(cst.parse_expression("f")).value == "f"
    assert names_in(cst.parse_expression("a.b[c:d + e](f, key=g.h)")) == {"a", "c", "d", "e", "f", "g"}


def test_a_with_block_that_switches_to_eval_mode_sets_the_mode() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import contextlib
        import torch
        from composer.utils import model_eval_mode

        @contextlib.contextmanager
        def evaluating(net):
            net.eval()
            yield
            net.train()

        @contextlib.contextmanager
        def timed(name):
            yield

        def a(net, val_loader):
            with model_eval_mode(net), torch.no_grad():
                for x in val_loader:
                    net(x)

        def b(net, val_loader):
            with evaluating(net):
                for x in val_loader:
                    net(x)

        def c(net, val_loader):
            with timed("val"), torch.no_grad():
                for x in val_loader:
                    net(x)
        """)))
    facts = model.fact(FileFacts)
    # a context manager of this file is read; one from elsewhere by its name; a timer sets nothing
    assert [facts.mode_set_for(loop) for loop in model.nodes(cst.For)] == [True, True, False]
