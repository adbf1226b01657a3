"""The ``compile`` instrument on its own: graph breaks with their reason and line, and recompilations."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.compile import Compile
from pytest_torchcheck.instruments.measurement import Measurement


def test_records_a_graph_break_and_a_recompile():
    def f(x):
        y = x * 2
        print("", end="")  # a graph break
        return y + 1

    cf = torch.compile(f, backend="eager")
    m = Measurement()
    with Compile(frozenset({"compile"})) as inst:
        cf(torch.ones(3))
        cf(torch.ones(3, dtype=torch.float64))  # a new dtype: recompiled
    inst.fill(m)
    assert m.compile.count("graph_breaks") >= 1
    brk = m.compile.graph_breaks[0]
    assert "test_compile.py:" in brk.location and "print" in brk.reason
    assert m.compile.count("recompiles") >= 1 and "dtype" in m.compile.recompiles[0].reason
