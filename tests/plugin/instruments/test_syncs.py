"""The ``syncs`` instrument on its own: a read-back is counted at the user's line; a host scalar is not."""

from __future__ import annotations

import sys

import torch

from pytest_torchcheck.instruments.measurement import Measurement
from pytest_torchcheck.instruments.syncs import Syncs


def test_counts_read_backs_by_call_site_and_fills_the_measurement():
    x = torch.ones(4)
    m = Measurement()
    with Syncs(frozenset({"syncs"})) as inst:
        x.sum().item()
        line = sys._getframe().f_lineno - 1
        x.tolist()
        torch.tensor(0.5).item()  # a host scalar the region made: no sync in a GPU run either
    inst.fill(m)
    assert m.syncs.total == 2
    assert {(what, site.line) for (what, site) in m.syncs.sites} == {(".item()", line), (".tolist()", line + 2)}
    assert all(site.file == __file__ for (_, site) in m.syncs.sites)
