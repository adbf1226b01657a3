"""Conditions that let a block run only now and then, or only from some iteration on (analysis/guards.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.guards import from_an_iteration_on
from lint_rules.analysis.model import FileModel


def test_a_block_guarded_by_a_counter_threshold_runs_from_that_iteration_on() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        for epoch in range(n):
            if epoch > decay_start:
                a()
            if start <= epoch:
                b()
            if epoch < warmup:
                c()
            if flag:
                d()
            if epoch == 3:
                e()
        for i, batch in enumerate(loader):
            if i >= k:
                if ready:
                    f()
        while running:
            if step > k:
                g()
    """)))
    loops = list(model.nodes(cst.For)) + list(model.nodes(cst.While))
    calls = {c.func.value: c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and len(c.func.value) == 1}
    found = {name: any(from_an_iteration_on(model, call, lp) for lp in loops) for name, call in calls.items()}
    # `epoch < warmup` runs in the first iterations only; a flag or one iteration is no threshold;
    # a while loop has no counter of its own
    assert found == {"a": True, "b": True, "c": False, "d": False, "e": False, "f": True, "g": False}
