"""The DDP assertions in real process groups: each inner test runs in two gloo ranks.

Two inner sessions keep the start-up cost down: one runs the assertions on
``fixtures/correct/ddp_train.py`` and its buggy twins (the reference passes, each
twin fails naming its culprit), the other runs unit-level cases (diverging
training, rank-dependent tensors, samplers that overlap or do not cover the
data, bad arguments, calls outside a distributed test).
"""

from __future__ import annotations

import textwrap

import pytest

from tests.plugin.conftest import Inner
from tests.test_fixtures import FIXTURES

CORRECT = FIXTURES / "correct" / "ddp_train.py"
SAMPLER_TWIN = FIXTURES / "buggy" / "ddp_train__sampler_without_set_epoch.py"
MOVED_TWIN = FIXTURES / "buggy" / "ddp_train__model_moved_after_wrap.py"

REFERENCES = '''
import importlib.util

import pytest
import torch

from pytest_torchcheck import assert_ddp_matches_single_process, assert_replicas_in_sync, assert_sampler_reshuffles

PATHS = {{"correct": {correct!r}, "no_set_epoch": {sampler!r}, "moved_after_wrap": {moved!r}}}


def load(which):
    spec = importlib.util.spec_from_file_location(f"ddp_train_{{which}}", PATHS[which])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.distributed(world_size=2)
@pytest.mark.parametrize("which", ["correct", "no_set_epoch"])
def test_sampler(which, rank, world_size):
    mod = load(which)
    trainer = mod.Trainer(mod.make_dataset(), rank, world_size)
    assert_sampler_reshuffles(trainer.loader, epochs=2, run=lambda: trainer.fit(2))


@pytest.mark.distributed(world_size=2)
def test_sampler_config_of_twin(rank, world_size):
    # Without run=, the assertion calls set_epoch itself: the twin's sampler is configured correctly.
    mod = load("no_set_epoch")
    assert_sampler_reshuffles(mod.Trainer(mod.make_dataset(), rank, world_size).loader, epochs=3)


@pytest.mark.distributed(world_size=2)
@pytest.mark.parametrize("which", ["correct", "moved_after_wrap"])
def test_replicas(which, rank, world_size):
    mod = load(which)
    trainer = mod.Trainer(mod.make_dataset(), rank, world_size)
    assert_replicas_in_sync(trainer.model)  # DDP broadcast rank 0's weights at the wrap
    trainer.fit(1)
    assert_replicas_in_sync(trainer.model)


@pytest.mark.distributed(world_size=2)
def test_matches_single_process(rank, world_size):
    mod = load("correct")
    x, y = mod.make_dataset().tensors
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 96, 16)]
    assert_ddp_matches_single_process(lambda: mod.build_model().to(mod.DTYPE), batches, mod.loss_fn,
                                      mod.make_optimizer)
'''


def test_references_pass_and_twins_fail_naming_the_culprit(inner: Inner) -> None:
    inner.pytester.makepyfile(test_refs=REFERENCES.format(correct=str(CORRECT), sampler=str(SAMPLER_TWIN),
                                                          moved=str(MOVED_TWIN)))
    result = inner.run("-p", "no:xdist")
    assert inner.outcomes(result) == {
        "test_sampler[correct]": "PASSED", "test_sampler[no_set_epoch]": "FAILED",
        "test_sampler_config_of_twin": "PASSED",
        "test_replicas[correct]": "PASSED", "test_replicas[moved_after_wrap]": "FAILED",
        "test_matches_single_process": "PASSED",
    }, result.stdout.str()
    inner.message(result, "test_sampler[no_set_epoch]").fnmatch_lines([
        "*TorchcheckFailure: assert_sampler_reshuffles: epoch 1 repeats the order of epoch 0 on ranks 0, 1 of 2: "
        "the same 51 indices in the same order (first [[]*",
        "*likely cause: sampler.set_epoch(epoch) is not called before each epoch: DistributedSampler.epoch was 0 "
        "at the start of every epoch*call loader.sampler.set_epoch(epoch)*",
    ])
    inner.message(result, "test_replicas[moved_after_wrap]").fnmatch_lines([
        "*TorchcheckFailure: assert_replicas_in_sync: parameter '0.weight' (16, 8) differs between ranks "
        "(bitwise (atol=0)): rank 1 disagrees with rank 0 (seen from rank ? of 2)",
        "*values: rank 0: sum *, norm *; rank 1: sum *, norm *",
        "*4 of 4 parameters and buffers differ: 0.weight, 0.bias, 2.weight, 2.bias",
        "*likely cause: the weights changed outside DDP's synchronised step: the model was moved or cast*after "
        "the DDP wrap*",
    ])


UNITS = '''
import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from pytest_torchcheck import (TorchcheckFailure, TorchcheckUsageError, assert_ddp_matches_single_process,
                               assert_replicas_in_sync, assert_sampler_reshuffles)


def linear():
    torch.manual_seed(0)
    return nn.Linear(4, 3)


def global_batches(n=3, size=8):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(size, 4, generator=g), torch.randn(size, 3, generator=g)) for _ in range(n)]


def sgd(params):
    return torch.optim.SGD(params, lr=0.1)


def mse(out, target):
    return nn.functional.mse_loss(out, target)


# ----------------------------------------------------- DDP vs single process
@pytest.mark.distributed(world_size=2)
def test_mean_loss_matches(rank):
    assert_ddp_matches_single_process(linear, global_batches(), mse, sgd, steps=3)

    def mlp():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 3))

    # float32 and Adam over 20 steps stay within the default tolerance
    assert_ddp_matches_single_process(mlp, iter(global_batches(n=30, size=16)), mse,
                                      lambda params: torch.optim.Adam(params, lr=1e-2), steps=20)


@pytest.mark.distributed(world_size=2)
def test_summed_loss(rank):
    assert_ddp_matches_single_process(linear, global_batches(), lambda o, t: ((o - t) ** 2).sum(), sgd)


@pytest.mark.distributed(world_size=2)
def test_batchnorm(rank):
    def model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3))

    assert_ddp_matches_single_process(model, global_batches(), mse, sgd)


@pytest.mark.distributed(world_size=2)
def test_rank_dependent_batches(rank):
    g = torch.Generator().manual_seed(rank)
    batches = [(torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g))]
    assert_ddp_matches_single_process(linear, batches, mse, sgd)


@pytest.mark.distributed(world_size=2)
def test_bad_arguments(rank):
    cases = [
        (dict(batches=[(torch.randn(5, 4), torch.randn(5, 3))]),
         r"batches\\[0\\] has a global batch of 5 samples, not divisible by world_size=2"),
        (dict(steps=0), r"steps must be a positive int or None .*got 0"),
        (dict(steps=5), r"batches holds 3 batch\\(es\\), steps=5"),
        (dict(model_fn=lambda: nn.Linear(4, 3)), r"model_fn\\(\\) built different weights on two calls"),
        (dict(loss_fn="mse"), r"loss_fn must be a callable"),
        (dict(batches=global_batches()[0]), r"it looks like one batch: pass \\[batch\\]"),
        (dict(rtol=-1), r"rtol must be a non-negative finite number, got -1"),
    ]
    for override, pattern in cases:
        kwargs = dict(model_fn=linear, batches=global_batches(), loss_fn=mse, optimizer_fn=sgd)
        kwargs.update(override)
        with pytest.raises(TorchcheckUsageError, match=pattern):
            assert_ddp_matches_single_process(**kwargs)
    with pytest.raises(TorchcheckUsageError, match=r"epochs must be an int >= 2 .*got 1"):
        assert_sampler_reshuffles(DistributedSampler(range(8)), epochs=1)
    with pytest.raises(TorchcheckUsageError, match=r"run must be a callable"):
        assert_sampler_reshuffles(DistributedSampler(range(8)), run=3)
    with pytest.raises(TorchcheckUsageError, match=r"loader must be a torch.utils.data.DataLoader or a Sampler"):
        assert_sampler_reshuffles([1, 2, 3])
    with pytest.raises(TorchcheckUsageError, match=r"model must be a torch.nn.Module"):
        assert_replicas_in_sync({"w": torch.ones(2)})
    with pytest.raises(TorchcheckUsageError, match=r"buffers must be None .*, True or False, got 'yes'"):
        assert_replicas_in_sync(nn.Linear(2, 2), buffers="yes")
    loader = DataLoader(range(8), sampler=DistributedSampler(range(8)))
    with pytest.raises(TorchcheckUsageError, match=r"run\\(\\) drew 1 pass\\(es\\) over the DistributedSampler "
                                                   r"on rank 0, expected at least epochs=2"):
        assert_sampler_reshuffles(loader, run=lambda: list(loader))


# ------------------------------------------------------------ replicas in sync
class Scaled(nn.Module):
    def __init__(self, rank):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(3, 3)
        self.register_buffer("scale", torch.full((3,), float(rank)))


@pytest.mark.distributed(world_size=2)
def test_rank_dependent_buffer(rank):
    assert_replicas_in_sync(Scaled(rank))


@pytest.mark.distributed(world_size=2)
def test_ddp_wrapped_and_tolerance(rank):
    model = nn.parallel.DistributedDataParallel(Scaled(0))
    assert_replicas_in_sync(model)
    with torch.no_grad():
        model.module.lin.bias[1] += 1e-6 * rank
    assert_replicas_in_sync(model, atol=1e-5)
    with pytest.raises(TorchcheckFailure, match=r"parameter 'lin.bias' \\(3,\\) differs between ranks"):
        assert_replicas_in_sync(model)


def train_bn_step(rank, **ddp_kwargs):
    """A textbook DDP step: BatchNorm, each rank on its own data."""
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3)), **ddp_kwargs)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(10 + rank)
    x, y = torch.randn(16, 4, generator=g) + rank, torch.randn(16, 3, generator=g)
    opt.zero_grad()
    mse(model(x), y).backward()
    opt.step()
    means = [torch.empty(8) for _ in range(2)]
    dist.all_gather(means, model.module[1].running_mean.detach().clone())
    assert not torch.equal(means[0], means[1])  # the ranks' statistics did diverge
    return model


@pytest.mark.distributed(world_size=2)
def test_batchnorm_broadcast_buffers(rank):
    # DDP broadcasts rank 0's buffers at the next forward: the ranks are in sync where it matters
    model = train_bn_step(rank)
    assert_replicas_in_sync(model)
    with pytest.raises(TorchcheckFailure, match=r"buffer '1.running_mean' \\(8,\\) differs between ranks") as info:
        assert_replicas_in_sync(model, buffers=True)
    assert "leave buffers=None" in str(info.value) and "SyncBatchNorm" not in str(info.value)


@pytest.mark.distributed(world_size=2)
def test_batchnorm_without_broadcast_buffers(rank):
    model = train_bn_step(rank, broadcast_buffers=False)
    assert_replicas_in_sync(model, buffers=False)
    assert_replicas_in_sync(model)


@pytest.mark.distributed(world_size=2)
def test_batchnorm_parameter_desync(rank):
    model = train_bn_step(rank)
    with torch.no_grad():
        model.module[0].weight.add_(0.01 * rank)  # outside DDP: nothing syncs it
    assert_replicas_in_sync(model)


# ------------------------------------------------------------ sampler
def dataset(n):
    return TensorDataset(torch.arange(n))


@pytest.mark.distributed(world_size=2)
def test_sampler_padding_and_drop_last(rank, world_size):
    for drop_last in (False, True):
        sampler = DistributedSampler(dataset(11), num_replicas=world_size, rank=rank, drop_last=drop_last)
        assert_sampler_reshuffles(DataLoader(dataset(11), batch_size=2, sampler=sampler), epochs=3)
        assert sampler.epoch == 0  # restored


@pytest.mark.distributed(world_size=2)
def test_sampler_no_shuffle(rank, world_size):
    assert_sampler_reshuffles(DistributedSampler(dataset(10), num_replicas=world_size, rank=rank, shuffle=False))


@pytest.mark.distributed(world_size=2)
def test_sampler_every_rank_shuffles_everything(rank):
    assert_sampler_reshuffles(DataLoader(dataset(10), batch_size=4, shuffle=True))


@pytest.mark.distributed(world_size=2)
def test_sampler_seed_per_rank(rank, world_size):
    assert_sampler_reshuffles(DistributedSampler(dataset(40), num_replicas=world_size, rank=rank, seed=rank))


@pytest.mark.distributed(world_size=2)
def test_sampler_wrong_num_replicas(rank):
    assert_sampler_reshuffles(DistributedSampler(dataset(12), num_replicas=4, rank=rank))


# ------------------------------------------------------------ outside ranks
def test_outside_a_distributed_test():
    for call in (lambda: assert_replicas_in_sync(nn.Linear(2, 2)),
                 lambda: assert_sampler_reshuffles(DistributedSampler(range(4), num_replicas=2, rank=0)),
                 lambda: assert_ddp_matches_single_process(linear, global_batches(), mse, sgd)):
        with pytest.raises(TorchcheckUsageError, match=r"no torch.distributed process group is initialised.*"
                                                       r"@pytest.mark.distributed\\(world_size=2\\)"):
            call()
    assert not dist.is_initialized()
'''


def test_assertions_catch_divergence_desync_and_bad_samplers(inner: Inner) -> None:
    inner.pytester.makepyfile(test_units=UNITS)
    result = inner.run("-p", "no:xdist")
    expected = {
        "test_mean_loss_matches": "PASSED", "test_summed_loss": "FAILED", "test_batchnorm": "FAILED",
        "test_rank_dependent_batches": "FAILED", "test_bad_arguments": "PASSED",
        "test_rank_dependent_buffer": "FAILED", "test_ddp_wrapped_and_tolerance": "PASSED",
        "test_batchnorm_broadcast_buffers": "PASSED", "test_batchnorm_without_broadcast_buffers": "FAILED",
        "test_batchnorm_parameter_desync": "FAILED",
        "test_sampler_padding_and_drop_last": "PASSED", "test_sampler_no_shuffle": "FAILED",
        "test_sampler_every_rank_shuffles_everything": "FAILED", "test_sampler_seed_per_rank": "FAILED",
        "test_sampler_wrong_num_replicas": "FAILED", "test_outside_a_distributed_test": "PASSED",
    }
    assert inner.outcomes(result) == expected, result.stdout.str()
    messages = {
        "test_summed_loss": [
            "*TorchcheckFailure: assert_ddp_matches_single_process: after step 1 of 3, parameter 'weight' (3, 4) "
            "differs between DDP (world_size=2, 4 samples per rank) and one process trained on the global batch "
            "of 8, on ranks 0, 1",
            "*max abs diff * at weight[[]*]: DDP *, single process *, allowed atol + rtol*|single| = * "
            "(atol=1e-06, rtol=0.0001)",
            "*2 of 2 parameters differ at this step: weight, bias; update size DDP / single process = 0.5",
            "*likely cause: the DDP update is 1/world_size = 1/2 of the single-process one: the loss is summed "
            "(reduction='sum')*",
        ],
        "test_batchnorm": [
            "*assert_ddp_matches_single_process: after step 1 of 3, parameter '0.weight' (6, 4) differs*",
            "*likely cause: BatchNorm1d normalises with per-rank batch statistics, which a shard of the global "
            "batch cannot match; on this device and backend (cpu, gloo) compare a model with per-sample "
            "normalisation (LayerNorm, GroupNorm) or batch norm in eval mode*",
        ],
        "test_rank_dependent_batches": [
            "*TorchcheckUsageError: assert_ddp_matches_single_process: batches[[]0] differs between rank 0 and "
            "rank 1: pass the same global batches on every rank*",
        ],
        "test_rank_dependent_buffer": [
            "*TorchcheckFailure: assert_replicas_in_sync: buffer 'scale' (3,) differs between ranks (bitwise "
            "(atol=0)): rank 1 disagrees with rank 0 (seen from rank ? of 2)",
            "*values: rank 0: sum 0, norm 0; rank 1: sum 3, norm 1.73205",
            "*likely cause: the buffer is updated or set per rank (or written outside forward()), and the model "
            "is not a DistributedDataParallel*",
            "*fix: pass the DDP-wrapped model (DDP broadcasts buffers by default, broadcast_buffers=True), or "
            "synchronise the buffers yourself*dist.broadcast(buffer, src=0)*",
        ],
        "test_batchnorm_without_broadcast_buffers": [
            "*TorchcheckFailure: assert_replicas_in_sync: buffer '1.running_mean' (8,) differs between ranks "
            "(bitwise (atol=0)): rank 1 disagrees with rank 0 (seen from rank ? of 2)",
            "*2 of 9 parameters and buffers differ: 1.running_mean, 1.running_var",
            "*likely cause: BatchNorm1d running statistics are updated from each rank's own batch, and "
            "DDP(broadcast_buffers=False) never broadcasts buffers",
            "*fix: keep DDP's default broadcast_buffers=True*, or synchronise the buffers yourself*",
        ],
        "test_batchnorm_parameter_desync": [
            "*TorchcheckFailure: assert_replicas_in_sync: parameter '0.weight' (8, 4) differs between ranks "
            "(bitwise (atol=0)): rank 1 disagrees with rank 0 (seen from rank ? of 2)",
            "*likely cause: the weights changed outside DDP's synchronised step*",
        ],
        "test_sampler_no_shuffle": [
            "*assert_sampler_reshuffles: epoch 1 repeats the order of epoch 0 on ranks 0, 1 of 2: the same 5 "
            "indices in the same order (first [[]*",
            "*likely cause: the DistributedSampler was built with shuffle=False: pass shuffle=True",
        ],
        "test_sampler_every_rank_shuffles_everything": [
            "*assert_sampler_reshuffles: in epoch 0 the ranks' shards overlap: 10 of 20 drawn indices repeat one "
            "already drawn (index * on ranks 0, 1, *)",
            "*likely cause: each rank samples the whole dataset (DataLoader(shuffle=True) or a RandomSampler*",
        ],
        "test_sampler_seed_per_rank": [
            "*assert_sampler_reshuffles: in epoch 0 the ranks' shards overlap: * of 40 drawn indices repeat*",
            "*likely cause: the ranks' samplers use different seeds ([[]0, 1[]]): give DistributedSampler the "
            "same seed on every rank",
        ],
        "test_sampler_wrong_num_replicas": [
            "*assert_sampler_reshuffles: in epoch 0 the ranks' shards do not cover the dataset: 6 of 12 indices "
            "are drawn by no rank (first [[]*]); 2 ranks draw 6 in all",
            "*likely cause: DistributedSampler got a num_replicas larger than the world size*",
        ],
    }
    for test, lines in messages.items():
        inner.message(result, test).fnmatch_lines(lines)
    # on CPU/gloo SyncBatchNorm raises, so the advice must not send users there
    inner.message(result, "test_batchnorm_without_broadcast_buffers").no_fnmatch_line("*SyncBatchNorm*")


def test_the_module_imports_no_torch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(check=textwrap.dedent("""
        import sys
        import pytest_torchcheck.ddp
        import pytest_torchcheck
        assert "torch" not in sys.modules, "pytest_torchcheck.ddp imported torch"
        assert {"assert_ddp_matches_single_process", "assert_replicas_in_sync",
                "assert_sampler_reshuffles"} <= set(pytest_torchcheck.__all__)
        print("ok")
    """))
    result = pytester.runpython(pytester.path / "check.py")
    assert result.ret == 0 and "ok" in result.stdout.str(), result.stdout.str() + result.stderr.str()
