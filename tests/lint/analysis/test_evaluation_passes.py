"""A shared epoch function that trains only when a flag parameter says so, called with the flag off:
an evaluation pass (analysis/evaluation.py ``evaluation_pass_calls``), and what TRN601 makes of it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules import registry
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.engine import lint_source

SHARED = """
import torch

def run_epoch(net, opt, feed, training, log_every=10):
    total = 0.0
    for step, batch in enumerate(feed):
        out = net(batch.x)
        loss = crit(out, batch.y)
        if training:
            opt.zero_grad()
            loss.backward()
            opt.step()
        total += loss.item()
    return total

def fit(net, opt, train_feed, held_feed, epochs):
    for epoch in range(epochs):
        run_epoch(net, opt, train_feed, True)
        run_epoch(net, opt, held_feed, training=False)
"""


def _pass(source: str) -> tuple[list[str], list[int]]:
    """(the model calls of run_epoch's loop that an evaluation pass runs, the lines of the calls that turn
    the training off)."""
    module = cst.parse_module(textwrap.dedent(source))
    model = FileModel(module)
    facts = model.fact(FileFacts)
    loop = next(lp for lp in model.nodes(cst.For) if model.enclosing_function(lp).name.value == "run_epoch")
    calls, sites = facts.evaluation_pass_calls(loop)
    lines = textwrap.dedent(source).splitlines()
    return ([module.code_for_node(c.func) for c in calls],
            [next(i for i, text in enumerate(lines, 1) if module.code_for_node(s) in text) for s in sites])


def _findings(source: str) -> list[tuple[int, str]]:
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == "TRN601"]


def test_a_call_that_turns_the_flag_off_runs_the_loop_as_an_evaluation_pass() -> None:
    assert _pass(SHARED) == (["net"], [19])
    assert _findings(SHARED) == [(6, "certain")]


@pytest.mark.parametrize(("change", "why"), [
    (("run_epoch(net, opt, held_feed, training=False)", "run_epoch(net, opt, held_feed, training=True)"),
     "no call turns the training off"),
    (("        if training:\n            opt.zero_grad()\n            loss.backward()\n",
      "        opt.zero_grad()\n        loss.backward()\n        if training:\n"),
     "backward() runs whatever the flag says"),
    (("        if training:", "        if log_every:"), "the guard is not the flag the call turns off"),
])
def test_near_misses_are_no_evaluation_pass(change: tuple[str, str], why: str) -> None:
    source = SHARED.replace(*change)
    assert source != SHARED
    assert _pass(source) == ([], []), why


@pytest.mark.parametrize("managed", [
    "        with torch.no_grad():\n            run_epoch(net, opt, held_feed, training=False)",
    "        with torch.set_grad_enabled(False):\n            run_epoch(net, opt, held_feed, training=False)",
])
def test_an_evaluation_pass_called_without_grad_is_quiet(managed: str) -> None:
    source = SHARED.replace("        run_epoch(net, opt, held_feed, training=False)", managed)
    assert source != SHARED
    assert _findings(source) == []


def test_the_model_call_under_the_flag_only_is_not_the_evaluation_pass() -> None:
    before = "        out = net(batch.x)\n        loss = crit(out, batch.y)\n        if training:\n"
    after = "        if training:\n            out = net(batch.x)\n            loss = crit(out, batch.y)\n"
    source = SHARED.replace(before, after)
    assert _pass(source) == ([], [19])
    assert _findings(source) == []
