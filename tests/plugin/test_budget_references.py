"""Each budget passes the budget_step reference and catches its buggy twin, in one real pytest session.

A twin names the budget key that must catch it on a ``Budget check:`` line of its docstring;
``SCENARIOS`` holds, per twin, the budget and the region (``train_steps`` over two batches, after
one warm-up call) and the lines its failure must show, pointing at the planted bug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.test_fixtures import BUGGY, FIXTURES

_BUDGET_CHECK = re.compile(r"^Budget check:\s*(?P<keys>.*?)\s*$", re.M)


@dataclass(frozen=True)
class Scenario:
    budget: str  # keyword arguments of the budget fixture call
    loss_fn: str  # "compute_loss" or "compiled_loss"
    expected: tuple[str, ...]  # fnmatch patterns of the twin's failure, in order


SCENARIOS: dict[str, Scenario] = {
    "budget_step__item_in_step_loop": Scenario(
        "syncs=0", "compute_loss",
        ("*budget exceeded: syncs 2 > limit 0 in region 'train_steps' of test_references.py::"
         "test_budget_step__item_in_step_loop[[]buggy[]] (device cpu)",
         "*2x .item() at *budget_step__item_in_step_loop.py:64  "
         "stats[[]\"loss\"[]] += loss.item()  # BUG: a host-device sync on every step")),
    "budget_step__loss_accumulated_with_graph": Scenario(
        'memory_growth="2KiB", repeats=5', "compute_loss",
        ("*budget exceeded: memory_growth * KiB/run > limit 2.00 KiB in region 'train_steps'*",
         "*cpu: * KiB per run (after each run: +*)  <- over",
         "*likely cause: something outlives each run: a loss accumulated with its autograd graph*")),
    "budget_step__dense_one_hot_targets": Scenario(
        'cpu_memory="7MiB"', "compute_loss",  # the reference peaks at 6.03 MiB, this twin at 8.03 MiB
        ("*budget exceeded: cpu_memory 8.* MiB > limit 7.00 MiB in region 'train_steps'*",
         "*4.00 MiB by aten.zeros at *budget_step__dense_one_hot_targets.py:40  "
         "one_hot = F.one_hot(targets, CLASSES).float()  # BUG*")),
    "budget_step__data_dependent_branch": Scenario(
        "graph_breaks=0", "compiled_loss",
        ("*budget exceeded: graph_breaks 1 > limit 0 in region 'train_steps'*",
         "*1. *budget_step__data_dependent_branch.py:*: Data-dependent branching (code: if loss > MAX_LOSS:*")),
}

HEADER = '''
import importlib.util

import pytest
import torch

PATHS = {{"correct": {correct!r}, "buggy": {buggy!r}}}


@pytest.fixture(params=sorted(PATHS), scope="module")
def mod(request):
    spec = importlib.util.spec_from_file_location(f"fixture_{{request.param}}_{{id(request)}}", PATHS[request.param])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
'''

TEST = '''

def test_{name}(mod, budget):
    model = mod.build_model()
    optimizer = mod.make_optimizer(model)
    batches, stats = mod.make_batches(2), mod.new_stats()
    mod.train_steps(model, optimizer, batches, stats, loss_fn=mod.{loss_fn})  # warm-up: lazy state, compilation
    budget(lambda: mod.train_steps(model, optimizer, batches, stats, loss_fn=mod.{loss_fn}), {budget},
           name="train_steps")
'''


def _twins() -> dict[str, list[str]]:
    twins = {}
    for path in BUGGY:
        found = _BUDGET_CHECK.findall(path.read_text(encoding="utf-8"))
        if found:
            twins[path.stem] = [k.strip() for k in found[0].split(",")]
    return twins


def test_every_budget_twin_has_a_scenario_naming_its_key() -> None:
    twins = _twins()
    assert set(twins) == set(SCENARIOS), f"twins with 'Budget check:' {sorted(twins)}, scenarios {sorted(SCENARIOS)}"
    for stem, keys in twins.items():
        for key in keys:
            assert f"{key}=" in SCENARIOS[stem].budget, f"{stem}: 'Budget check: {key}' but the scenario sets " \
                                                        f"{SCENARIOS[stem].budget}"
    # the four bugs the issue asks budgets to catch
    assert {k for keys in twins.values() for k in keys} >= {"syncs", "memory_growth", "cpu_memory", "graph_breaks"}


def test_budgets_pass_reference_and_catch_twins(inner) -> None:
    correct = FIXTURES / "correct" / "budget_step.py"
    # one module per twin: the `mod` fixture pairs the reference with that twin
    files = {}
    for stem, sc in SCENARIOS.items():
        header = HEADER.format(correct=str(correct), buggy=str(FIXTURES / "buggy" / f"{stem}.py"))
        files[f"test_ref_{stem}"] = header + TEST.format(name=stem, loss_fn=sc.loss_fn, budget=sc.budget)
    inner.pytester.makepyfile(**files)
    result = inner.run("-p", "no:randomly", "-p", "no:xdist")
    outcomes = inner.outcomes(result)
    for stem, sc in SCENARIOS.items():
        assert outcomes.get(f"test_{stem}[correct]") == "PASSED", (stem, outcomes, result.stdout.str()[-4000:])
        assert outcomes.get(f"test_{stem}[buggy]") == "FAILED", (stem, outcomes)
        patterns = [p.replace("test_references.py::", f"test_ref_{stem}.py::") for p in sc.expected]
        inner.message(result, f"test_{stem}[buggy]").fnmatch_lines(patterns)
    assert "Traceback" not in result.stdout.str()
