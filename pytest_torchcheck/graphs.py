"""Autograd graphs kept alive across optimizer steps (``running_loss += loss``).

After ``backward()`` the saved activations are freed, but a tensor that still refers
to the graph (a loss summed without ``.item()``/``.detach()``, a list of losses) keeps
every autograd node of every iteration alive: host memory that grows each step and
that device-memory budgets do not see. At each ``optimizer.step()`` the check finds the
live tensors that carry a graph and measures the graph they keep; a graph that grows
step after step is a leak, and the message names the variable that holds it.
"""

from __future__ import annotations

import gc
import sys
from typing import Any, Callable

from pytest_torchcheck.arguments import check_callable, check_optimizer
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

_NODE_LIMIT = 200_000  # stop counting a graph beyond this many nodes


def _graph_size(fn: Any, seen: set[int] | None = None) -> int:
    """Autograd nodes reachable from ``fn`` not already in ``seen`` (which it extends)."""
    seen = set() if seen is None else seen
    before = len(seen)
    stack = [fn]
    while stack and len(seen) < _NODE_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(next_fn for next_fn, _ in getattr(node, "next_functions", ()))
    return len(seen) - before


def _holders(tensor: Any, frame: Any, skip: set[int]) -> list[str]:
    """Who refers to ``tensor``: a variable of a function on the stack (directly or through a list),
    an attribute or a dict key."""
    local_vars = []  # the user's loop is on the stack below optimizer.step()
    while frame is not None:
        code = frame.f_code
        where = f"{code.co_name}() ({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})"
        local_vars.extend((var, value, where) for var, value in frame.f_locals.items())
        frame = frame.f_back
    names = [f"variable '{var}' of {where}" for var, value, where in local_vars if value is tensor]
    variables = {var for var, value, _ in local_vars if value is tensor}
    for ref in gc.get_referrers(tensor):
        if id(ref) in skip:
            continue
        if isinstance(ref, dict):
            names.extend(f"attribute or key '{key}'" for key, value in ref.items()
                         if value is tensor and isinstance(key, str) and key not in variables)
        elif isinstance(ref, list):
            owners = [f"'{var}' of {where}" for var, value, where in local_vars if value is ref]
            names.append(f"a list of {len(ref)} items" + (f", variable {owners[0]}" if owners else ""))
    return names


def assert_no_graph_retained(optimizer: Any, run: Callable[[], Any], *, growth: float = 2.0,
                             min_steps: int = 3) -> Any:
    """Run ``run()`` (your training loop): no autograd graph grows from one optimizer step to the next.

    At each ``optimizer.step()``, the autograd nodes reachable from live tensors are
    counted. If that count grows at every step for ``min_steps`` steps and ends at least
    ``growth`` times its first value, a tensor is keeping every iteration's graph: the
    failure names the tensor holding the largest graph and the variable, attribute or
    list that holds it. Returns what ``run`` returns.
    """
    __tracebackhide__ = True
    import torch

    check_optimizer("assert_no_graph_retained", "optimizer", optimizer)
    check_callable("assert_no_graph_retained", "run", run, call="run()",
                   expected="your training loop, with no arguments")
    if not (isinstance(min_steps, int) and min_steps >= 2):
        raise TorchcheckUsageError(f"assert_no_graph_retained: min_steps must be an int >= 2, got {min_steps!r}")
    if not (isinstance(growth, (int, float)) and growth > 1):
        raise TorchcheckUsageError(f"assert_no_graph_retained: growth must be a number > 1, got {growth!r}")
    sizes: list[int] = []
    state = {"failed": False}

    def live_graphs() -> tuple[int, list[tuple[int, Any]]]:
        """All autograd nodes reachable from live tensors (each counted once), and each tensor's own graph."""
        # Garbage first: a graph in an unreachable reference cycle (an earlier test's traceback) would count
        # until the cyclic collector happens to run, and its drop mid-run would hide a growing graph.
        gc.collect()
        found = []
        tensor_type = torch.Tensor
        for obj in gc.get_objects():
            # type(), not isinstance(): isinstance reads __class__, which some lazy module objects warn about.
            if issubclass(type(obj), tensor_type) and not issubclass(type(obj), torch.nn.Parameter):
                if obj.grad_fn is not None:
                    found.append(obj)
        seen: set[int] = set()
        total = sum(_graph_size(t.grad_fn, seen) for t in found)
        return total, [(_graph_size(t.grad_fn), t) for t in found]

    def pre_step(opt: Any, args: Any, kwargs: Any) -> None:
        __tracebackhide__ = True
        if state["failed"]:
            return
        total, graphs = live_graphs()
        sizes.append(total)
        recent = sizes[-min_steps:]
        growing = len(recent) == min_steps and all(b > a for a, b in zip(recent, recent[1:]))
        if not (growing and recent[0] > 0 and recent[-1] >= growth * recent[0]):
            return
        state["failed"] = True
        size, tensor = max(graphs, key=lambda item: item[0])
        frame = sys._getframe()
        holders = _holders(tensor, frame.f_back, {id(graphs), id(frame)}) or ["(no named holder found)"]
        del graphs
        raise TorchcheckFailure(
            f"assert_no_graph_retained: the autograd graphs alive at each optimizer step grow: "
            f"{', '.join(map(str, recent))} nodes at steps {len(sizes) - min_steps + 1}-{len(sizes)}\n"
            f"  largest: a tensor {tuple(tensor.shape)} ({type(tensor.grad_fn).__name__}) keeping {size} nodes, "
            f"held by {'; '.join(holders)}\n"
            "  likely cause: a loss accumulated with its graph (total += loss, losses.append(loss)): every "
            "iteration's autograd graph stays alive until the loop ends; accumulate loss.item() or "
            "loss.detach() instead", "assert_no_graph_retained")

    handle = optimizer.register_step_pre_hook(pre_step)
    try:
        result = run()
    finally:
        handle.remove()
    if len(sizes) < min_steps:
        raise TorchcheckUsageError(f"assert_no_graph_retained: run made {len(sizes)} optimizer step(s); it needs at "
                                   f"least min_steps={min_steps} to see a graph grow")
    return result
