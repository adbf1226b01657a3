"""TRN903 at run time (pytest_torchcheck/watch/checks/trn903_replicas_diverged.py): replicas whose parameters
differ between ranks after the same step. Two ranks need two processes (tests/plugin/watch_ranks.py): one
program holds the buggy loop and its near misses."""

from __future__ import annotations

from pathlib import Path

from tests.plugin.watch_helpers import line_of
from tests.plugin.watch_ranks import run_ranks

PROGRAM = """
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = torch.randn(8, 4), torch.randn(8, 2)

    def train(model, opt, average, marker):
        for step in range(5):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            if average:
                for p in model.parameters():
                    dist.all_reduce(p.grad)
                    p.grad /= world
            if marker:
                opt.step()  # <- bug
            else:
                opt.step()

    torch.manual_seed(rank)  # each rank draws its own weights
    ddp = DDP(nn.Linear(4, 2))  # DDP broadcasts rank 0's: replicas
    train(ddp, torch.optim.SGD(ddp.parameters(), lr=0.1), False, False)
    probe = nn.Linear(4, 2)  # a model of each rank's own, never averaged: apart by design
    train(probe, torch.optim.SGD(probe.parameters(), lr=0.1), False, False)
    manual = nn.Linear(4, 2)  # averaged gradients on weights that were never made alike
    train(manual, torch.optim.SGD(manual.parameters(), lr=0.1), True, True)
    torch.manual_seed(0)
    fixed = nn.Linear(4, 2)  # the fix: the same seed on every rank
    train(fixed, torch.optim.SGD(fixed.parameters(), lr=0.1), True, False)
    dist.barrier()
    dist.destroy_process_group()
"""


def test_replicas_apart_are_reported_on_each_rank_and_the_near_misses_are_not(tmp_path: Path) -> None:
    codes, by_rank, outs = run_ranks(tmp_path, PROGRAM, "TRN903")
    assert codes == [1, 1], outs
    line = line_of(PROGRAM, "# <- bug")
    assert [[(f["code"], f["line"]) for f in rank] for rank in by_rank] == [[("TRN903", line)]] * 2, outs
    message = by_rank[0][0]["message"]
    assert message.startswith("after optimizer step 1, rank 0 and rank 1 of 2 held different parameters (the sum of "
                              "parameter 0: "), message
    assert message.endswith("though they are replicas: their gradients were all-reduced across the ranks; the "
                            "ranks now train different models (replicas must start alike and receive the same "
                            "updates)")
