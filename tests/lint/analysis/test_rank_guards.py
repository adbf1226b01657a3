"""Rank guards on snippets: which processes reach a statement."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.rank_guards import GLOBAL, LOCAL, RankGuards

_SRC = """
import os
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])

def save_a():
    if dist.get_rank() == 0:
        mark("a")

def save_b():
    if local_rank == 0:
        mark("b")

def save_c(rank):
    if rank != 0:
        return
    mark("c")

def save_d():
    mark("d")

def save_e():
    mark("e")

def run(rank):
    if rank == 0:
        save_e()

@rank_zero_only
def save_f():
    mark("f")

def save_g(args):
    if args.rank % args.ngpus_per_node == 0:
        mark("g")
"""


def test_guard_of_each_mark() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    guards = model.fact(RankGuards)
    marks = {c.args[0].value.evaluated_value: c for c in model.nodes(cst.Call)
             if isinstance(c.func, cst.Name) and c.func.value == "mark"}
    assert {k: guards.guard_of(c, 0) for k, c in sorted(marks.items())} == {
        "a": GLOBAL, "b": LOCAL, "c": GLOBAL, "d": GLOBAL, "e": GLOBAL, "f": GLOBAL, "g": LOCAL}


def test_an_unguarded_caller_makes_the_callee_reached_by_every_rank() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        def save():
            mark()
        def run(rank):
            if rank == 0:
                save()
            save()
        run(int(os.environ["RANK"]))
        """)))
    call = next(c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "mark")
    assert model.fact(RankGuards).guard_of(call, 0) is None
