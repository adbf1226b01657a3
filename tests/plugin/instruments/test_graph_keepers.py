"""Graph keepers on their own: the line whose results hold the largest autograd graph is named."""

from __future__ import annotations

import torch

from pytest_torchcheck.instruments.allocator import attribute_cpu_memory
from pytest_torchcheck.instruments.measurement import Measurement


def test_names_the_line_that_keeps_every_steps_graph():
    w = torch.ones(8, requires_grad=True)
    state = {"total": torch.zeros(())}

    def steps():
        for _ in range(50):
            loss = (w * 2).sum()
            state["total"] = state["total"] + loss  # kept with its graph
        return state

    m = Measurement(cpu_peak=1)
    attribute_cpu_memory(steps, m)  # runs the region under GraphKeepers from torchcheck's frame
    nodes, site = m.cpu_graphs[0]
    assert nodes >= 100
    assert site.file == __file__ and site.source == 'state["total"] = state["total"] + loss  # kept with its graph'
