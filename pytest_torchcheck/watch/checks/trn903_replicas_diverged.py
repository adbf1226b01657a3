"""TRN903 (runtime only): data-parallel replicas whose parameters differ between ranks after a step."""

from __future__ import annotations

import hashlib
import json
import weakref

from pytest_torchcheck.watch.check import Check, optimizer_params

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

MAX_PARAMS = 16  # the parameters fingerprinted: enough to see replicas apart, cheap at any model size
RTOL = 1e-7  # float64 sums of equal tensors agree far closer, whatever the hardware's summation order


def _fingerprint(params: list[Any]) -> list[float]:
    """Sum and sum of squares of each of the first parameters, in float64: one host read for them all."""
    import torch

    with torch.no_grad():
        parts = []
        for p in params[:MAX_PARAMS]:
            d = p.detach().double()
            parts += [d.sum(), (d * d).sum()]
        return torch.stack([t.cpu() for t in parts]).tolist()


def _differ(a: list[float], b: list[float]) -> int | None:
    """The first value that differs beyond rounding, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if abs(x - y) > RTOL * (abs(x) + abs(y)) + 1e-12:
            return i
    return None


class ReplicasDiverged(Check):
    """
    Observed, under an initialised process group of more than one rank, for each optimizer whose
    parameters are replicas (all of them in a module `DistributedDataParallel` wrapped, or each of their
    gradients passed to `dist.all_reduce` before a step): after its steps 1, 2, 4, 8, ... each rank
    leaves a fingerprint of the parameters (float64 sum and sum of squares of each of the first 16) in
    the process group's key-value store, and at its next such step compares it with what the other
    ranks left for the same step; a rank whose parameters differ from another's after the same step is
    reported at the `step()`. Nothing waits on another rank: no collective is called, a rank that never
    reaches a step is not compared. Parameters that differ by design (model parallel, FSDP shards,
    independent per-rank models whose gradients are not all-reduced, DDP's ignored parameters) are
    never compared.
    """

    CODE = "TRN903"
    NAME = "replicas-diverged"
    SEVERITY = "error"
    SUMMARY = "Data-parallel replicas hold different parameters after the same optimizer step"
    DOC = """
## What it does
Watches the parameters of data-parallel training (a `DistributedDataParallel` model, or gradients
averaged with `dist.all_reduce`) and reports when two ranks hold different values after the same
optimizer step.

## Why is this bad?
Data parallelism averages gradients so that every rank applies the same update to the same weights.
Replicas that start apart (a model initialised without a common seed and never broadcast) or are
updated apart (a parameter changed on one rank) train different models: each rank's gradients are
computed on weights that the others do not have, and the checkpoint saved from rank 0 is not what the
averaged gradients trained.

## Example
```python
model = nn.Linear(16, 4)  # each rank draws its own initial weights
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    opt.step()
```

Use instead:
```python
torch.manual_seed(0)  # or broadcast rank 0's weights: for p in model.parameters(): dist.broadcast(p.data, 0)
model = DistributedDataParallel(nn.Linear(16, 4))
```
"""

    def __init__(self) -> None:
        super().__init__()
        self._wrapped: weakref.WeakKeyDictionary[Any, tuple] = weakref.WeakKeyDictionary()  # DDP -> ids
        self._reduced: set[int] = set()  # ids of tensors all-reduced since the last step
        self._serial: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._steps: dict[int, int] = {}
        self._replicas: dict[int, str] = {}  # optimizer serial -> why its parameters are replicas
        self._pending: dict[int, tuple[int, str, list[float]]] = {}  # serial -> (step, key, own fingerprint)
        self._store: Any = None

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.nn.parallel.DistributedDataParallel.__init__", post=self._wrapping)
        events.intercept("torch.distributed.all_reduce", pre=self._all_reduce)

    def _wrapping(self, args: tuple, kwargs: dict, result: Any) -> None:
        ddp = args[0]
        module = getattr(ddp, "module", None)
        if module is None:
            return
        ignored = set(getattr(ddp, "parameters_to_ignore", ()) or ())
        ids = frozenset(id(p) for n, p in module.named_parameters() if n not in ignored)
        site = self.construction_site(ddp)
        self._wrapped[ddp] = (ids, site)

    def _all_reduce(self, args: tuple, kwargs: dict) -> None:
        tensor = args[0] if args else kwargs.get("tensor")
        if tensor is not None:
            self._reduced.add(id(tensor))

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._serial[optimizer] = len(self._steps)
        self._steps[len(self._steps)] = 0

    def on_step_pre(self, optimizer: Any) -> None:
        if not self._wrapped and not self._reduced:  # no DDP model, no all-reduce: nothing replicated
            return
        serial = self._serial.get(optimizer)
        if serial is None or serial in self._replicas:
            return
        params = optimizer_params(optimizer)
        if not params:
            return
        ids = {id(p) for p in params}
        for wrapped_ids, site in self._wrapped.values():
            if ids <= wrapped_ids:
                where = f" at line {site.line}" if site is not None else ""
                self._replicas[serial] = f"DistributedDataParallel wrapped them{where}"
                return
        if self._reduced and all(p.grad is not None and id(p.grad) in self._reduced for p in params):
            self._replicas[serial] = "their gradients were all-reduced across the ranks"

    def on_step_post(self, optimizer: Any) -> None:
        if self._reduced:
            self._reduced = set()
        serial = self._serial.get(optimizer)
        if serial is None:
            return
        self._steps[serial] += 1
        step = self._steps[serial]
        if step & (step - 1) or serial not in self._replicas:  # steps 1, 2, 4, 8, ...
            return
        group = self._group()
        if group is None:
            return
        store, rank, world = group
        params = optimizer_params(optimizer)
        shapes = hashlib.sha256(repr([(tuple(p.shape), str(p.dtype)) for p in params]).encode()).hexdigest()[:16]
        site = self.site()
        earlier = self._pending.get(serial)
        if earlier is not None:
            self._compare(store, rank, world, serial, earlier, site)
        key = f"torchcheck/TRN903/{serial}/{shapes}"
        own = _fingerprint(params)
        store.set(f"{key}/{step}/{rank}", json.dumps(own))
        self._pending[serial] = (step, key, own)

    def _group(self) -> tuple[Any, int, int] | None:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
            return None
        from torch.distributed import distributed_c10d

        self._store = distributed_c10d._get_default_store()
        return self._store, dist.get_rank(), dist.get_world_size()

    def _compare(self, store: Any, rank: int, world: int, serial: int, earlier: tuple, site: Site | None) -> None:
        step, key, own = earlier
        for other in range(world):
            name = f"{key}/{step}/{other}"
            if other == rank or not store.check([name]):  # not there: that rank is not at this step
                continue
            theirs = json.loads(store.get(name))
            i = _differ(own, theirs)
            if i is not None:
                what = "sum of squares" if i % 2 else "sum"
                self.report(site,
                            f"after optimizer step {step}, rank {rank} and rank {other} of {world} held different "
                            f"parameters (the {what} of parameter {i // 2}: {own[i]:.6g} here, {theirs[i]:.6g} on "
                            f"rank {other}), though they are replicas: {self._replicas[serial]}; the ranks now train "
                            "different models (replicas must start alike and receive the same updates)")
                return

    def finish(self) -> None:
        self._wrapped.clear()
        self._pending.clear()
        self._store = None
