"""The ``held_memory`` instrument on its own: what each repeated run leaves held, garbage cycles excluded."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.held_memory import HeldMemory
from pytest_torchcheck.instruments.measurement import Measurement

MIB = 1 << 20


def test_growth_per_run_is_what_each_run_keeps():
    kept = []

    def leaky():
        kept.append(torch.ones(MIB // 4))  # 1 MiB kept
        cycle = [torch.ones(MIB // 4)]
        cycle.append(cycle)  # garbage, collected before each reading

    m = Measurement()
    with HeldMemory(frozenset({"held_memory"})) as inst:
        run = inst.wrap(leaky)
        for _ in range(4):
            run()
    inst.fill(m)
    assert list(m.growth) == ["cpu"] and len(m.growth["cpu"]) == 5  # the start and one reading per run
    assert MIB <= m.growth_per_run("cpu") < MIB + MIB // 4
