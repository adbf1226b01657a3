"""The ``flops`` instrument on its own: torch's flop counter, total and by operator."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.flops import Flops
from pytest_torchcheck.instruments.measurement import Measurement


def test_counts_matmul_flops():
    a, b = torch.ones(4, 8), torch.ones(8, 16)
    m = Measurement()
    with Flops(frozenset({"flops"})) as inst:
        a @ b
        a + 1  # elementwise: no flops counted
    inst.fill(m)
    assert m.flops == 2 * 4 * 8 * 16
    assert m.flops_by_op == {"aten.mm": 2 * 4 * 8 * 16}
