"""Which functions of a file every spawned worker process runs."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.processes import spawned_functions

_SRC = """
import multiprocessing
import torch.multiprocessing as tmp
from torch.multiprocessing import spawn as launch

def setup(rank):
    pass

def worker(rank, cfg):
    setup(rank)
    fit(rank)

def fit(rank):
    deeper()

def deeper():
    pass

def other_worker(rank):
    pass

def by_target():
    pass

def never_launched():
    pass

def main():
    tmp.spawn(worker, args=(cfg,), nprocs=4)
    launch(fn=other_worker, nprocs=2)
    multiprocessing.Process(target=by_target).start()
    never_launched()
"""


def test_spawned_workers_and_their_callees() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    ids = spawned_functions(model)
    names = {fn.name.value for fn in model.nodes(cst.FunctionDef) if id(fn) in ids}
    assert names == {"worker", "setup", "fit", "deeper", "other_worker", "by_target"}


def test_a_file_that_spawns_nothing_has_no_workers() -> None:
    model = FileModel(cst.parse_module("def worker(rank):\n    pass\nworker(0)\n"))
    assert spawned_functions(model) == frozenset()


_SHARDED = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
sampler = DistributedSampler(train_set)
batches = DataLoader(train_set, batch_size=32, sampler=sampler)
for epoch in range(5):
    sampler.set_epoch(epoch)
    for x in batches:
        step(x)
"""


def _shards(source: str) -> bool:
    from lint_rules.analysis.processes import shards_without_sync

    return shards_without_sync(FileModel(cst.parse_module(textwrap.dedent(source))))


def test_shards_without_sync() -> None:
    assert _shards(_SHARDED)
    # DDP, FSDP or a hand-written gradient all_reduce keeps the replicas in step
    assert not _shards(_SHARDED + "net = torch.nn.parallel.DistributedDataParallel(net)\n")
    assert not _shards(_SHARDED + "from torch.distributed.fsdp import FullyShardedDataParallel\n"
                                  "net = FullyShardedDataParallel(net)\n")
    assert not _shards(_SHARDED + "for p in net.parameters():\n    dist.all_reduce(p.grad)\n")
    # no distributed sampler: one process sees all the data
    assert not _shards(_SHARDED.replace("sampler=sampler", "shuffle=True").replace(
        "sampler = DistributedSampler(train_set)\n", "").replace("    sampler.set_epoch(epoch)\n", ""))
