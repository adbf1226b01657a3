"""DDP bugs from public reports, reproduced on real 2-rank gloo groups through the harness, with fixed twins.

- A model cast or moved after the DDP wrap (https://github.com/pytorch/pytorch/issues/104336): DDP's gradient
  hooks keep the old parameters, the ranks train apart; ``assert_replicas_in_sync`` names the first tensor that
  differs and the likely cause.
- DDP wrapping on some ranks only (https://github.com/pytorch/pytorch/issues/54232): rank 0's ``DDP(model)``
  waits in its constructor's collectives while rank 1 trains alone. ``assert_replicas_in_sync`` on rank 1 enters
  the collective rank 0 waits in, so DDP's own check fails at once on rank 0 ("DDP expects same model across all
  ranks") instead of hanging; the harness reports rank 0's ``DDP(model)`` line as the root cause and rank 1's
  broken collective as a one-line consequence.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.plugin.test_failure_output import failure_section, line_of

DDP_BUGS = textwrap.dedent('''
    import pytest
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from pytest_torchcheck import assert_replicas_in_sync


    def shard(rank, dtype=torch.float32):
        g = torch.Generator().manual_seed(10 + rank)  # each rank trains on its own data
        return [(torch.randn(8, 4, generator=g).to(dtype), torch.randn(8, 1, generator=g).to(dtype))
                for _ in range(2)]


    def model_fn():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


    def train(model, rank, dtype=torch.float32):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in shard(rank, dtype):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()


    # Fixed twins first: the first DDP construction imports a lot of torch, which the warm ranks then share.
    @pytest.mark.parametrize("variant", ["fixed", "buggy"])
    @pytest.mark.distributed(world_size=2, timeout=60)
    def test_cast_after_wrap(rank, variant):
        if variant == "fixed":
            model = DDP(model_fn().double())
        else:
            model = DDP(model_fn())
            model.double()  # the bug: DDP's reducer still holds the float32 parameters
        train(model, rank, torch.float64)
        assert_replicas_in_sync(model)


    @pytest.mark.parametrize("variant", ["fixed", "buggy"])
    @pytest.mark.distributed(world_size=2, timeout=60)
    def test_wrapped_on_rank_0_only(rank, variant):
        model = model_fn()
        if variant == "fixed" or rank == 0:  # the bug: only rank 0 wraps
            model = DDP(model)
        train(model, rank)
        assert_replicas_in_sync(model)
''')


def test_ddp_bugs_are_caught_and_fixed_twins_pass(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_ddp_bugs=DDP_BUGS)
    result = inner.run("--tb=auto")
    assert inner.outcomes(result) == {
        "test_cast_after_wrap[fixed]": "PASSED", "test_cast_after_wrap[buggy]": "FAILED",
        "test_wrapped_on_rank_0_only[fixed]": "PASSED", "test_wrapped_on_rank_0_only[buggy]": "FAILED",
    }, result.stdout.str()

    cast = "\n".join(failure_section(result, "test_cast_after_wrap[buggy]"))
    assert "assert_replicas_in_sync: parameter '0.weight' (8, 4) differs between ranks" in cast, cast
    assert "the model was moved or cast (.to(device/dtype), .cuda(), .double()) after the DDP wrap" in cast
    assert cast.count("differs between ranks") == 1, cast  # the other rank's identical failure is one line

    wrapped = failure_section(result, "test_wrapped_on_rank_0_only[buggy]")
    text = "\n".join(wrapped)
    assert "rank 0 of 2 failed first, in call (root cause)" in text, text
    assert "DDP expects same model across all ranks" in text, text
    assert f"test_ddp_bugs.py:{line_of(DDP_BUGS, 'model = DDP(model)')}: RuntimeError" in text, text
    assert "site-packages/torch" not in text
    assert len(wrapped) <= 30, text
