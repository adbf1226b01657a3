"""DDP correctness assertions, called inside the ranks of a ``@pytest.mark.distributed`` test.

- ``assert_ddp_matches_single_process``: N ranks training on shards of B samples end
  with the parameters of one process trained on the global batch of N*B (the DDP invariant).
- ``assert_replicas_in_sync``: every rank holds the same parameters and buffers (except
  the buffers that DDP broadcasts from rank 0 at the start of every forward).
- ``assert_sampler_reshuffles``: the sampler reshuffles every epoch, and the ranks'
  shards are disjoint and cover the dataset.

Every rank reaches the same verdict from the same gathered data, so a failure
never leaves a rank waiting in a collective. Importing this module imports no torch.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pytest_torchcheck.arguments import check_number
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

if TYPE_CHECKING:
    import torch

_CAST_HINT = ("the model was moved or cast (.to(device/dtype), .cuda(), .double()) after the DDP wrap, so "
              "DDP's gradient buckets no longer match its parameters")


# ------------------------------------------------------------------ helpers
def _require_group(check: str) -> Any:
    """``torch.distributed`` with an initialised default group, or a usage error."""
    __tracebackhide__ = True
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise TorchcheckUsageError(
            f"{check}: no torch.distributed process group is initialised in this process; {check} compares "
            f"ranks, so call it inside the ranks of a distributed test: mark the test with "
            f"@pytest.mark.distributed(world_size=2) (or launch it with torchrun)")
    return dist


def _callable(check: str, name: str, value: Any, expected: str) -> None:
    __tracebackhide__ = True
    if not callable(value):
        raise TorchcheckUsageError(f"{check}: {name} must be a callable {expected}, got {type(value).__name__} "
                                   f"{value!r:.80}")


def _unwrap(model: Any) -> Any:
    from torch.nn.parallel import DistributedDataParallel

    return model.module if isinstance(model, DistributedDataParallel) else model


def _digest(t: "torch.Tensor") -> str:
    """A hash of the tensor's bytes: equal exactly when the values are bitwise equal."""
    import torch

    flat = t.detach().reshape(-1).contiguous().cpu()
    return hashlib.blake2b(flat.view(torch.uint8).numpy().tobytes(), digest_size=8).hexdigest()


def _ranks(ranks: Iterable[int]) -> str:
    ranks = sorted(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


# ---------------------------------------------------------- replicas in sync
def _broadcast_buffers(model: Any) -> set[str]:
    """Names (without ``module.``) of the buffers DDP overwrites with rank 0's at the start of each forward.

    Empty unless ``model`` is a ``DistributedDataParallel`` with ``broadcast_buffers=True``
    (the default; ``forward_sync_buffers`` from torch 2.13, of which ``broadcast_buffers``
    is an alias); buffers listed in ``_ddp_params_and_buffers_to_ignore`` are never broadcast.
    """
    from torch.nn.parallel import DistributedDataParallel

    if not isinstance(model, DistributedDataParallel) or not getattr(model, "broadcast_buffers", True):
        return set()
    ignored = getattr(model, "parameters_to_ignore", set())
    return {n for n, _ in model.module.named_buffers() if n not in ignored}


def _syncbn_works(t: "torch.Tensor", dist: Any) -> bool:
    """SyncBatchNorm is worth suggesting: CUDA tensors in a group with NCCL (on CPU/gloo it raises)."""
    return t.device.type == "cuda" and "nccl" in str(dist.get_backend()).lower()


def _buffer_advice(model: Any, module: Any, name: str, t: "torch.Tensor", dist: Any, broadcast: set[str],
                   buffers: bool | None) -> str:
    """Why buffer ``name`` differs between ranks, and only fixes that work on this device and backend."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    owner_name = name.rpartition(".")[0]
    owner = module.get_submodule(owner_name) if owner_name else module
    bn = isinstance(owner, torch.nn.modules.batchnorm._BatchNorm)
    what = (f"{type(owner).__name__} running statistics are updated from each rank's own batch" if bn
            else "the buffer is updated or set per rank")
    explicit = ("synchronise the buffers yourself before comparing or evaluating: dist.broadcast(buffer, "
                "src=0) for each buffer, or dist.all_reduce(buffer) / world_size to average the statistics")
    if name in broadcast:  # only with buffers=True
        cause = (f"{what}; DDP (broadcast_buffers=True) overwrites every rank's buffers with rank 0's at the "
                 f"start of each forward, so between a step and the next forward this is expected")
        fix = "leave buffers=None to skip the buffers DDP broadcasts, or " + explicit
    elif isinstance(model, DistributedDataParallel) and getattr(model, "broadcast_buffers", True):
        cause = f"{what}, and DDP does not broadcast it: it is listed in _ddp_params_and_buffers_to_ignore"
        fix = explicit
    elif isinstance(model, DistributedDataParallel):
        cause = f"{what}, and DDP(broadcast_buffers=False) never broadcasts buffers"
        fix = ("keep DDP's default broadcast_buffers=True (rank 0's buffers are broadcast at the start of each "
               "forward), or " + explicit)
    else:
        cause = (f"{what} (or written outside forward()), and the model is not a DistributedDataParallel, which "
                 f"broadcasts rank 0's buffers at the start of each forward")
        fix = ("pass the DDP-wrapped model (DDP broadcasts buffers by default, broadcast_buffers=True), or "
               + explicit)
    if bn and _syncbn_works(t, dist):
        fix += ("; or compute the statistics over all ranks with "
                "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) before the DDP wrap")
    return f"likely cause: {cause}\n  fix: {fix}"


def assert_replicas_in_sync(model: "torch.nn.Module", *, atol: float = 0.0, buffers: bool | None = None) -> None:
    """Every rank holds the same parameters and buffers as rank 0.

    ``model`` is an ``nn.Module`` or a ``DistributedDataParallel`` wrapping one
    (names are reported without the ``module.`` prefix). Each rank hashes the
    bytes of every parameter and buffer and the hashes are gathered, so the
    default check is bitwise (``atol=0``): DDP applies the same averaged
    gradients to the same weights, so healthy replicas are identical. With
    ``atol > 0`` tensors whose hashes differ are gathered and compared elementwise.

    Parameters are always compared. ``buffers`` picks the buffers:

    - ``None`` (default): every buffer, except those a DDP with ``broadcast_buffers=True``
      (its default) broadcasts. DDP overwrites them with rank 0's at the start of
      every forward, so after a step they legitimately hold each rank's own
      statistics (BatchNorm's running mean and variance) until the next forward.
    - ``True``: every buffer, e.g. after you synchronised them yourself.
    - ``False``: no buffer.
    """
    __tracebackhide__ = True
    check = "assert_replicas_in_sync"
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TorchcheckUsageError(f"{check}: model must be a torch.nn.Module or a DistributedDataParallel, "
                                   f"got {type(model).__name__}")
    atol = check_number(check, "atol", atol)
    if not (buffers is None or isinstance(buffers, bool)):
        raise TorchcheckUsageError(f"{check}: buffers must be None (skip the buffers DDP broadcasts), True or "
                                   f"False, got {buffers!r:.80}")
    dist = _require_group(check)
    rank, world = dist.get_rank(), dist.get_world_size()
    module = _unwrap(model)
    broadcast = _broadcast_buffers(model)
    skip = broadcast if buffers is None else set()
    tensors = [("parameter", n, p) for n, p in module.named_parameters()] + \
              ([("buffer", n, b) for n, b in module.named_buffers() if n not in skip] if buffers is not False
               else [])
    local = [(kind, n, tuple(t.shape), str(t.dtype), _digest(t), float(t.detach().double().sum()),
              float(t.detach().double().norm())) for kind, n, t in tensors]
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, local)

    layouts = [[entry[:4] for entry in g] for g in gathered]
    for r in range(1, world):
        if layouts[r] != layouts[0]:
            a, b = layouts[0], layouts[r]
            first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            where0 = f"{a[first][0]} '{a[first][1]}' {a[first][2]} {a[first][3]}" if first < len(a) else "nothing"
            wherer = f"{b[first][0]} '{b[first][1]}' {b[first][2]} {b[first][3]}" if first < len(b) else "nothing"
            raise TorchcheckFailure(
                f"{check}: rank {r} holds a different set of tensors than rank 0 ({len(b)} vs {len(a)} parameters "
                f"and buffers); tensor #{first} is {where0} on rank 0 but {wherer} on rank {r}\n"
                f"  likely cause: the model is built differently per rank (rank-dependent architecture or "
                f"a checkpoint loaded on some ranks only)", check)

    differing = []
    for i, (kind, name, shape, dtype, *_rest) in enumerate(local):
        groups: dict[str, list[int]] = {}
        for r in range(world):
            groups.setdefault(gathered[r][i][4], []).append(r)
        if len(groups) == 1:
            continue
        if atol > 0:
            t = tensors[i][2].detach()
            copies = [torch.empty_like(t) for _ in range(world)]
            dist.all_gather(copies, t.contiguous())
            worst = max(float((c.double() - copies[0].double()).abs().max()) for c in copies)
            if worst <= atol:
                continue
        differing.append((kind, name, shape, groups, i))
    if not differing:
        return

    kind, name, shape, groups, i = differing[0]
    agree0 = groups[gathered[0][i][4]]
    others = [rs for d, rs in groups.items() if d != gathered[0][i][4]]
    holders = "; ".join(f"{_ranks(rs)}: sum {_fmt(gathered[rs[0]][i][5])}, norm {_fmt(gathered[rs[0]][i][6])}"
                        for rs in [agree0, *others])
    odd = sorted(r for rs in others for r in rs)
    more = ""
    if len(differing) > 1:
        names = ", ".join(f"{d[1]}" for d in differing[:8]) + (", ..." if len(differing) > 8 else "")
        more = f"\n  {len(differing)} of {len(local)} parameters and buffers differ: {names}"
    if kind == "buffer":
        advice = _buffer_advice(model, module, name, tensors[i][2], dist, broadcast, buffers)
    else:
        advice = (f"likely cause: the weights changed outside DDP's synchronised step: {_CAST_HINT}; "
                  f"rank-dependent initialisation or a checkpoint loaded after the wrap (DDP broadcasts rank 0's "
                  f"weights only once, when it wraps the model); or the model was never wrapped in DDP")
    tol = "bitwise (atol=0)" if atol == 0 else f"atol={atol:g}"
    raise TorchcheckFailure(
        f"{check}: {kind} '{name}' {shape} differs between ranks ({tol}): {_ranks(odd)} disagree"
        f"{'s' if len(odd) == 1 else ''} with rank 0 (seen from rank {rank} of {world})\n"
        f"  values: {holders}{more}\n"
        f"  {advice}", check)


# ------------------------------------------------------- sampler reshuffles
class _Recorder:
    """Swaps a sampler's class for a subclass that records each pass (every ``iter()``) it yields."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler
        self.passes: list[list[int]] = []
        self.epochs: list[Any] = []  # sampler.epoch when each pass began
        self.original = type(sampler)
        recorder = self
        base = self.original

        class Recording(base):  # type: ignore[misc, valid-type]
            __slots__ = ()  # same layout as the base, so __class__ can be swapped back and forth

            def __iter__(self) -> Any:
                seen: list[int] = []
                recorder.passes.append(seen)
                recorder.epochs.append(getattr(self, "epoch", None))
                for index in base.__iter__(self):
                    seen.append(int(index))
                    yield index

        Recording.__name__ = Recording.__qualname__ = base.__name__
        self.recording = Recording

    def __enter__(self) -> "_Recorder":
        self.sampler.__class__ = self.recording
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sampler.__class__ = self.original


def _find_sampler(check: str, loader: Any) -> Any:
    __tracebackhide__ = True
    from torch.utils.data import BatchSampler, DataLoader, Sampler

    if isinstance(loader, DataLoader):
        sampler = loader.sampler
        if isinstance(loader.batch_sampler, BatchSampler) and loader.batch_sampler.sampler is not sampler:
            sampler = loader.batch_sampler.sampler
        return sampler
    if isinstance(loader, Sampler):
        return loader
    raise TorchcheckUsageError(f"{check}: loader must be a torch.utils.data.DataLoader or a Sampler (such as "
                               f"DistributedSampler), got {type(loader).__name__}")


def _dataset_size(loader: Any, sampler: Any) -> int | None:
    for holder in (sampler, loader):
        ds = getattr(holder, "dataset", None)
        if ds is not None:
            try:
                return len(ds)
            except TypeError:
                return None
    return None


def assert_sampler_reshuffles(loader: Any, epochs: int = 2, *, run: Callable[[], Any] | None = None) -> None:
    """The sampler's order changes between epochs; the ranks' shards are disjoint and cover the dataset.

    ``loader`` is a ``DataLoader`` (its sampler is checked, typically a
    ``DistributedSampler``) or a sampler. Each pass over the sampler, that is each
    ``iter()`` of it, is one epoch.

    - ``run=None``: the assertion plays a correct training loop itself, calling
      ``sampler.set_epoch(epoch)`` and drawing ``epochs`` passes. This checks the
      sampler's configuration (``shuffle``, ``seed``, ``rank``/``num_replicas``).
    - ``run=callable``: call your own training code (``run()`` takes no arguments
      and must iterate ``loader`` for at least ``epochs`` epochs). The passes it
      draws are recorded, so a loop that forgets ``sampler.set_epoch(epoch)``
      fails here: it replays the same order every epoch.

    Indices refer to one dataset shared by all ranks. ``DistributedSampler`` pads
    with up to ``world_size - 1`` repeated indices when the dataset size is not
    divisible by the world size (``drop_last=False``), or leaves up to
    ``world_size - 1`` out (``drop_last=True``): neither counts as an overlap or a gap.
    """
    __tracebackhide__ = True
    check = "assert_sampler_reshuffles"
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 2:
        raise TorchcheckUsageError(f"{check}: epochs must be an int >= 2 (two epochs are needed to see a "
                                   f"reshuffle), got {epochs!r}")
    if run is not None:
        _callable(check, "run", run, "taking no arguments that runs your training loop for epochs >= 2")
    sampler = _find_sampler(check, loader)
    dist = _require_group(check)
    world = dist.get_world_size()
    name = type(sampler).__name__

    recorder = _Recorder(sampler)
    saved_epoch = getattr(sampler, "epoch", None)
    with recorder:
        if run is not None:
            run()
        else:
            for epoch in range(epochs):
                if hasattr(sampler, "set_epoch"):
                    sampler.set_epoch(epoch)
                for _ in iter(sampler):
                    pass
    if run is None and saved_epoch is not None:
        sampler.set_epoch(saved_epoch)
    local = {"passes": recorder.passes[:epochs], "count": len(recorder.passes), "epochs": recorder.epochs,
             "shuffle": getattr(sampler, "shuffle", None), "seed": getattr(sampler, "seed", None),
             "size": _dataset_size(loader, sampler), "sampler": name}
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, local)

    short = [r for r, g in enumerate(gathered) if g["count"] < epochs]
    if short:
        r = short[0]
        raise TorchcheckUsageError(
            f"{check}: run() drew {gathered[r]['count']} pass(es) over the {name} on rank {r}, expected at least "
            f"epochs={epochs}: run must iterate the loader for at least {epochs} epochs")
    for e in range(1, epochs):
        same = [r for r, g in enumerate(gathered) if g["passes"][e] == g["passes"][e - 1]
                and len(g["passes"][e]) > 1]
        if not same:
            continue
        g = gathered[same[0]]
        first = g["passes"][e][:8]
        seen_epochs = sorted({ep for ep in g["epochs"][:epochs] if ep is not None})
        if g["shuffle"] is False:
            cause = f"the {name} was built with shuffle=False: pass shuffle=True"
        elif run is not None and len(seen_epochs) == 1:
            cause = (f"sampler.set_epoch(epoch) is not called before each epoch: {name}.epoch was "
                     f"{seen_epochs[0]} at the start of every epoch, and it shuffles with seed + epoch; call "
                     f"loader.sampler.set_epoch(epoch) at the top of the epoch loop")
        else:
            cause = ("the sampler does not reshuffle per epoch (a fixed order, a generator re-seeded every "
                     "epoch, or set_epoch() not called)")
        raise TorchcheckFailure(
            f"{check}: epoch {e} repeats the order of epoch {e - 1} on {_ranks(same)} of {world}: the same "
            f"{len(g['passes'][e])} indices in the same order (first {first})\n"
            f"  every epoch trains on the same sequence of batches, which hurts generalisation\n"
            f"  likely cause: {cause}", check)

    for e in range(epochs):
        shards = [g["passes"][e] for g in gathered]
        lengths = [len(s) for s in shards]
        if len(set(lengths)) > 1:
            raise TorchcheckFailure(
                f"{check}: in epoch {e} the ranks draw different numbers of indices "
                f"({', '.join(f'rank {r}: {n}' for r, n in enumerate(lengths))})\n"
                f"  uneven shards make ranks run different numbers of steps, and DDP hangs waiting for the "
                f"missing gradients\n  likely cause: a sampler that does not split the dataset evenly; use "
                f"DistributedSampler(dataset, num_replicas=world_size, rank=rank)", check)
        size = gathered[0]["size"]
        owners: dict[int, list[int]] = {}
        for r, shard in enumerate(shards):
            for i in shard:
                owners.setdefault(i, []).append(r)
        counts = Counter(i for shard in shards for i in shard)
        total = sum(lengths)
        duplicates = total - len(counts)
        if size is None:
            size = len(counts)
        padding = max(total - size, 0)  # DistributedSampler repeats < world_size indices to even out
        dropped = max(size - total, 0)  # ... or, with drop_last=True, leaves < world_size out
        pad_note = (f"; the sampler may repeat up to world_size - 1 = {world - 1} indices as padding "
                    f"({padding} here)" if 0 < padding < world else "")
        if duplicates > padding or padding >= max(world, 1) and duplicates:
            shared = [(i, rs) for i, rs in owners.items() if len(rs) > 1]
            examples = ", ".join(f"index {i} on {_ranks(set(rs))}" for i, rs in shared[:3])
            seeds = {g["seed"] for g in gathered}
            cause = ("the ranks' samplers use different seeds " f"({sorted(seeds)}): give DistributedSampler the "
                     "same seed on every rank" if len(seeds) > 1 else
                     "each rank samples the whole dataset (DataLoader(shuffle=True) or a RandomSampler instead "
                     "of DistributedSampler), or DistributedSampler got the wrong rank/num_replicas")
            raise TorchcheckFailure(
                f"{check}: in epoch {e} the ranks' shards overlap: {duplicates} of {total} drawn indices repeat "
                f"one already drawn ({examples}){pad_note}\n"
                f"  ranks train on the same samples and the effective dataset shrinks\n"
                f"  likely cause: {cause}", check)
        missing = sorted(set(range(size)) - set(counts))
        if len(missing) > dropped or dropped >= max(world, 1):
            raise TorchcheckFailure(
                f"{check}: in epoch {e} the ranks' shards do not cover the dataset: {len(missing)} of {size} "
                f"indices are drawn by no rank (first {missing[:8]}); {world} ranks draw {total} in all\n"
                f"  likely cause: DistributedSampler got a num_replicas larger than the world size, or the "
                f"wrong rank; build it as DistributedSampler(dataset, num_replicas=world_size, rank=rank)", check)


# --------------------------------------------------- DDP vs single process
def _split_batch(check: str, k: int, batch: Any, world: int) -> tuple[Any, Any, int]:
    __tracebackhide__ = True
    import torch

    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise TorchcheckUsageError(f"{check}: batches[{k}] must be a global batch (inputs, targets), got "
                                   f"{type(batch).__name__}{f' of length {len(batch)}' if hasattr(batch, '__len__') else ''}")
    inputs, targets = batch
    for what, t in (("inputs", inputs), ("targets", targets)):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            raise TorchcheckUsageError(f"{check}: batches[{k}] {what} must be a tensor with a batch dimension, "
                                       f"got {type(t).__name__}")
    size = inputs.shape[0]
    if targets.shape[0] != size:
        raise TorchcheckUsageError(f"{check}: batches[{k}] has {size} inputs but {targets.shape[0]} targets")
    if size % world:
        raise TorchcheckUsageError(
            f"{check}: batches[{k}] has a global batch of {size} samples, not divisible by world_size={world}; "
            f"each rank trains on a contiguous shard of global_batch / world_size samples: use a global batch "
            f"that is a multiple of {world}")
    return inputs, targets, size // world


def assert_ddp_matches_single_process(
    model_fn: Callable[[], "torch.nn.Module"],
    batches: Iterable[Any],
    loss_fn: Callable[[Any, Any], "torch.Tensor"],
    optimizer_fn: Callable[[Any], "torch.optim.Optimizer"],
    steps: int | None = None,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-6,
    ddp_kwargs: dict[str, Any] | None = None,
) -> None:
    """N ranks on per-rank batches of B end with the parameters of one process trained on N*B.

    - ``model_fn()`` builds a fresh model, the same on every call and every rank
      (seed inside it); it is called twice: the single-process reference and the
      model wrapped in ``DistributedDataParallel(**ddp_kwargs)``.
    - ``batches``: an iterable of global batches ``(inputs, targets)``, the same on
      every rank; the first dimension (N*B) must be divisible by the world size.
      Rank r trains on the contiguous shard ``[r*B:(r+1)*B]``, the reference on all of it.
    - ``loss_fn(outputs, targets)`` returns a scalar loss. Use a mean-reduced loss:
      DDP averages gradients over ranks, which equals the global-batch mean.
    - ``optimizer_fn(params)`` builds the optimizer (for both runs).
    - ``steps``: how many batches to train on (default: all of them).

    After every step every parameter is compared elementwise,
    ``|ddp - single| <= atol + rtol * |single|``; the failure names the first
    differing parameter, the step and the rank. The forward must be deterministic
    (no dropout) and per-sample (BatchNorm computes statistics per rank).
    """
    __tracebackhide__ = True
    check = "assert_ddp_matches_single_process"
    import torch

    _callable(check, "model_fn", model_fn, "taking no arguments that returns a fresh nn.Module")
    _callable(check, "loss_fn", loss_fn, "loss_fn(outputs, targets) returning a scalar loss")
    _callable(check, "optimizer_fn", optimizer_fn, "optimizer_fn(params) returning a torch.optim.Optimizer")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise TorchcheckUsageError(f"{check}: steps must be a positive int or None (all batches), got {steps!r}")
    rtol, atol = check_number(check, "rtol", rtol), check_number(check, "atol", atol)
    if ddp_kwargs is not None and not isinstance(ddp_kwargs, dict):
        raise TorchcheckUsageError(f"{check}: ddp_kwargs must be a dict of DistributedDataParallel arguments, "
                                   f"got {type(ddp_kwargs).__name__}")
    if isinstance(batches, torch.Tensor) or (isinstance(batches, (tuple, list)) and batches
                                             and isinstance(batches[0], torch.Tensor)):
        raise TorchcheckUsageError(f"{check}: batches must be an iterable of global batches (inputs, targets); "
                                   f"it looks like one batch: pass [batch]")
    try:
        chosen = list(itertools.islice(iter(batches), steps))
    except TypeError:
        raise TorchcheckUsageError(f"{check}: batches must be an iterable of global batches (inputs, targets), "
                                   f"got {type(batches).__name__}") from None
    if not chosen or (steps is not None and len(chosen) < steps):
        raise TorchcheckUsageError(f"{check}: batches holds {len(chosen)} batch(es), steps={steps} asks for "
                                   f"{steps or 'at least 1'}")
    dist = _require_group(check)
    rank, world = dist.get_rank(), dist.get_world_size()
    split = [_split_batch(check, k, b, world) for k, b in enumerate(chosen)]

    reference, replica = model_fn(), model_fn()
    for m in (reference, replica):
        if not isinstance(m, torch.nn.Module):
            raise TorchcheckUsageError(f"{check}: model_fn() must return a torch.nn.Module, got {type(m).__name__}")
    ref_params = dict(reference.named_parameters())
    for n, p in replica.named_parameters():
        if n not in ref_params or not torch.equal(p, ref_params[n]):
            raise TorchcheckUsageError(
                f"{check}: model_fn() built different weights on two calls (parameter '{n}' differs): both runs "
                f"must start from the same model; seed inside model_fn, e.g. torch.manual_seed(0) first")
    # Both facts must hold on every rank; gather them so every rank stops with the same error.
    local = ([_digest(p) for p in ref_params.values()], [_digest(x) for x, y, _ in split] +
             [_digest(y) for x, y, _ in split])
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, local)
    for r in range(1, world):
        if gathered[r][0] != gathered[0][0]:
            i = next(i for i, (a, b) in enumerate(zip(gathered[0][0], gathered[r][0])) if a != b)
            raise TorchcheckUsageError(
                f"{check}: model_fn() builds different weights on rank 0 and rank {r} (parameter "
                f"'{list(ref_params)[i]}'): seed inside model_fn so every rank starts from the same model")
        if gathered[r][1] != gathered[0][1]:
            i = next(i for i, (a, b) in enumerate(zip(gathered[0][1], gathered[r][1])) if a != b) % len(split)
            raise TorchcheckUsageError(
                f"{check}: batches[{i}] differs between rank 0 and rank {r}: pass the same global batches on "
                f"every rank (each rank takes its own shard of them); build them from a fixed seed")

    from torch.nn.parallel import DistributedDataParallel

    device = next(replica.parameters()).device
    kwargs = dict(ddp_kwargs or {})
    if device.type == "cuda" and "device_ids" not in kwargs:
        kwargs["device_ids"] = [device.index]
    ddp = DistributedDataParallel(replica, **kwargs)
    opt_ref, opt_ddp = optimizer_fn(reference.parameters()), optimizer_fn(ddp.parameters())
    for o in (opt_ref, opt_ddp):
        if not (hasattr(o, "step") and hasattr(o, "zero_grad")):
            raise TorchcheckUsageError(f"{check}: optimizer_fn(params) must return a torch.optim.Optimizer, got "
                                       f"{type(o).__name__}")
    reference.train()
    ddp.train()
    names = [n for n, _ in replica.named_parameters()]
    ddp_params = dict(replica.named_parameters())

    for k, (inputs, targets, per_rank) in enumerate(split, start=1):
        inputs, targets = inputs.to(device), targets.to(device)
        before = {n: p.detach().clone() for n, p in ref_params.items()}
        opt_ref.zero_grad()
        loss_fn(reference(inputs), targets).backward()
        opt_ref.step()
        lo, hi = rank * per_rank, (rank + 1) * per_rank
        opt_ddp.zero_grad()
        loss_fn(ddp(inputs[lo:hi]), targets[lo:hi]).backward()
        opt_ddp.step()

        bad: list[str] = []
        detail = None
        with torch.no_grad():
            for n in names:
                single, multi = ref_params[n].double(), ddp_params[n].double()
                diff = (multi - single).abs()
                allowed = atol + rtol * single.abs()
                over = ~(diff <= allowed)
                if bool(over.any()):
                    bad.append(n)
                    if detail is None:
                        flat = int(diff.reshape(-1).argmax())
                        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
                        upd_single = float((single - before[n].double()).norm())
                        upd_multi = float((multi - before[n].double()).norm())
                        detail = (n, tuple(ref_params[n].shape), float(diff.max()), where,
                                  float(multi[where]), float(single[where]), float(allowed[where]),
                                  upd_multi / upd_single if upd_single else math.inf)
        flags = torch.zeros(world, dtype=torch.int64)
        flags[rank] = 1 if bad else 0
        dist.all_reduce(flags)
        if not bool(flags.any()):
            continue
        reports: list[Any] = [None] * world
        dist.all_gather_object(reports, (bad, detail))
        failing = [r for r in range(world) if flags[r]]
        bad, detail = reports[failing[0]]
        n, shape, worst, where, v_multi, v_single, allowed, ratio = detail
        causes = []
        if abs(ratio * world - 1) < 0.05:
            causes.append(f"the DDP update is 1/world_size = 1/{world} of the single-process one: the loss is "
                          f"summed (reduction='sum'); DDP averages gradients over ranks, so use a mean-reduced "
                          f"loss (or multiply the loss by world_size)")
        bn = [m for m in replica.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        if bn and _syncbn_works(next(replica.parameters()), dist):
            causes.append(f"{type(bn[0]).__name__} normalises with per-rank batch statistics; convert the model "
                          f"with torch.nn.SyncBatchNorm.convert_sync_batchnorm")
        elif bn:  # SyncBatchNorm raises on CPU tensors and with gloo: never send users there
            causes.append(f"{type(bn[0]).__name__} normalises with per-rank batch statistics, which a shard of "
                          f"the global batch cannot match; on this device and backend "
                          f"({next(replica.parameters()).device.type}, {dist.get_backend()}) compare a model with "
                          f"per-sample normalisation (LayerNorm, GroupNorm) or batch norm in eval mode (SyncBatchNorm "
                          f"needs CUDA tensors and NCCL)")
        if any(isinstance(m, torch.nn.modules.dropout._DropoutNd) for m in replica.modules()):
            causes.append("dropout draws different masks for a shard than for the global batch; test without it")
        if not causes:
            causes.append("the loss or forward depends on the batch composition (per-batch normalisation, a loss "
                          "averaged over something other than samples), or the replicas drifted apart (" + _CAST_HINT
                          + "; check with assert_replicas_in_sync)")
        idx = f"[{', '.join(map(str, where))}]" if where else ""
        raise TorchcheckFailure(
            f"{check}: after step {k} of {len(split)}, parameter '{n}' {shape} differs between DDP "
            f"(world_size={world}, {per_rank} samples per rank) and one process trained on the global batch of "
            f"{per_rank * world}, on {_ranks(failing)}\n"
            f"  max abs diff {worst:.3g} at {n}{idx}: DDP {_fmt(v_multi)}, single process {_fmt(v_single)}, "
            f"allowed atol + rtol*|single| = {allowed:.3g} (atol={atol:g}, rtol={rtol:g})\n"
            f"  {len(bad)} of {len(names)} parameters differ at this step: {', '.join(bad[:8])}"
            f"{', ...' if len(bad) > 8 else ''}; update size DDP / single process = {ratio:.3g}\n"
            "  likely cause: " + "; or ".join(causes) + "\n"
            "  if the difference is rounding (low precision, many steps), raise rtol=/atol=", check)
