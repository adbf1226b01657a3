"""assert_no_graph_retained counts live graphs only: garbage that the cyclic collector frees mid-run
(an earlier test's traceback holding a graph) must not hide a graph that grows.

Seen as a flaky ``DID NOT RAISE`` of the realbugs case ``loss_kept_with_its_graph`` after other tests
in the same process; here the collection is forced at step 3 so the case is deterministic.
"""

from __future__ import annotations

import textwrap

import pytest

GARBAGE = textwrap.dedent('''
    import gc

    import torch
    from torch import nn

    from pytest_torchcheck import assert_no_graph_retained


    def test_growing_graph_with_garbage_collected_mid_run():
        gc.disable()  # the collection comes where this test puts it, not where allocations would
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(8, 4, requires_grad=True)
        big = x
        for _ in range(300):
            big = big * 1.0001
        cycle = [big]
        cycle.append(cycle)  # unreachable once deleted: only the cyclic collector frees its 300-node graph
        del cycle, big, x

        def epoch():
            running = torch.zeros(())
            for i in range(6):
                opt.zero_grad()
                loss = model(torch.randn(8, 4)).pow(2).mean()
                loss.backward()
                if i == 2:
                    gc.collect()
                opt.step()
                running = running + loss  # keeps every iteration's graph
            return running.item()

        try:
            assert_no_graph_retained(opt, epoch)
        finally:
            gc.enable()
''')


def test_garbage_collected_mid_run_does_not_hide_a_growing_graph(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_garbage=GARBAGE)
    result = inner.run()
    assert inner.outcomes(result) == {"test_growing_graph_with_garbage_collected_mid_run": "FAILED"}, \
        result.stdout.str()
    inner.message(result, "test_growing_graph_with_garbage_collected_mid_run").fnmatch_lines([
        "*assert_no_graph_retained: the autograd graphs alive at each optimizer step grow: * nodes at steps 1-3",
        "*held by variable 'running' of epoch()*"])
