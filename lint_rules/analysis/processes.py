"""Code that runs as one of several processes of a job (TRN301).

:func:`spawned_functions` gives the functions of a file that run once per process started by
``torch.multiprocessing.spawn(worker, nprocs=...)`` / ``start_processes`` or a
``multiprocessing.Process(target=worker)``, and the functions of the file they call (bounded
depth). Such a worker usually owns one GPU: anything in it that spreads one model over every
visible GPU (``nn.DataParallel``) runs once per process, each on all devices.

:func:`shards_without_sync` says whether a file splits its data between processes (a
shuffling ``DistributedSampler`` feeds one of its loaders, built here or by a project function
it calls) while nothing keeps the processes' models in step: no ``DistributedDataParallel``,
FSDP or hand-written ``all_reduce``. Each process then trains a replica of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.loaders import LoaderFacts
from lint_rules.analysis.scopes import keyword_arg

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import ScopeModel

# Launchers whose first argument (or `target=`) runs in every started process.
_SPAWNERS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn",
                       "torch.multiprocessing.start_processes", "torch.multiprocessing.spawn.start_processes"})
_PROCESS_CLASSES = frozenset({"multiprocessing.Process", "torch.multiprocessing.Process",
                              "multiprocessing.context.Process"})
_DEPTH = 3  # calls followed from a worker into the file's own functions
# What keeps the replicas of a multi-process job in step.
_SYNCHRONISERS = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.",
                  "torch.distributed.fsdp.", "torch.distributed.all_reduce", "torch.distributed.reduce",
                  "torch.distributed._composable.", "torch.distributed.algorithms.")


def spawned_functions(model: "ScopeModel") -> frozenset[int]:
    """Ids of the ``def``s of this file that run in each started worker process."""
    return model.fact(_build)


def _build(model: "ScopeModel") -> frozenset[int]:
    found: dict[int, cst.FunctionDef] = {}
    for call in model.nodes(cst.Call):
        q = model.qualified_name(call.func)
        target: cst.CSTNode | None = None
        if q in _SPAWNERS:
            arg = keyword_arg(call, "fn")
            target = arg.value if arg is not None else (call.args[0].value if call.args
                                                        and call.args[0].keyword is None else None)
        elif q in _PROCESS_CLASSES:
            arg = keyword_arg(call, "target")
            target = arg.value if arg is not None else None
        fn = model.local_function(target) if target is not None else None
        if fn is not None:
            found[id(fn)] = fn
    frontier = list(found.values())
    for _ in range(_DEPTH):
        following: list[cst.FunctionDef] = []
        for fn in frontier:
            for call in model.within(cst.Call, fn):
                callee = model.local_function(call.func)
                if callee is not None and id(callee) not in found:
                    found[id(callee)] = callee
                    following.append(callee)
        frontier = following
    return frozenset(found)


def shards_without_sync(model: "ScopeModel") -> bool:
    """The file's loaders draw from a shuffling ``DistributedSampler`` (one shard per process) and
    no call of it synchronises models or gradients between the processes."""
    return model.fact(_shards)


def _shards(model: "ScopeModel") -> bool:
    if not model.fact(LoaderFacts).feeds:
        return False
    return not any((q := model.qualified_name(c.func)) is not None and q.startswith(_SYNCHRONISERS)
                   for c in model.nodes(cst.Call))
