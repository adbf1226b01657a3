"""Autograd graphs kept alive across optimizer steps (``running_loss += loss``).

After ``backward()`` the saved activations are freed, but a tensor that still refers
to the graph (a loss summed without ``.item()``/``.detach()``, a list of losses) keeps
every autograd node of every iteration alive: host memory that grows each step and
that device-memory budgets do not see. At each ``optimizer.step()`` the check finds the
live tensors that carry a graph and measures the part of it made since the check began;
a graph that grows step after step is a leak, and the message names what holds it.
"""

from __future__ import annotations

import gc
import sys
import types
from typing import Any, Callable

from pytest_torchcheck.arguments import check_callable, check_optimizer
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

_NODE_LIMIT = 200_000  # stop counting a graph beyond this many nodes
_UNNUMBERED = 2**64 - 1  # the sequence number of nodes outside the forward order (AccumulateGrad)


def _number(node: Any) -> int:
    """Autograd's sequence number of ``node``: stable for the node's life, unlike the id of its Python wrapper
    (created on access and freed with its last reference)."""
    number = getattr(node, "_sequence_nr", None)
    return number() if number is not None else _UNNUMBERED


def _graph_size(fn: Any, seen: set[int] | None = None, before: frozenset[int] = frozenset()) -> int:
    """Autograd nodes reachable from ``fn`` not already in ``seen`` (which it extends), without the nodes
    numbered in ``before`` (graphs alive before the check) and what lies below them."""
    seen = set() if seen is None else seen
    count = 0
    stack = [fn]
    while stack and len(seen) < _NODE_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if before and _number(node) in before:
            continue  # below a node older than the check lies only what existed then
        count += 1
        stack.extend(next_fn for next_fn, _ in getattr(node, "next_functions", ()))
    return count


def _numbers(fns: list[Any]) -> frozenset[int]:
    """The sequence numbers of every node reachable from ``fns`` (nodes without one are left out)."""
    numbers, seen, stack = set(), set(), list(fns)
    while stack and len(seen) < _NODE_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        numbers.add(_number(node))
        stack.extend(next_fn for next_fn, _ in getattr(node, "next_functions", ()))
    numbers.discard(_UNNUMBERED)
    return frozenset(numbers)


def _attributes(obj: Any) -> dict[str, Any]:
    """``obj``'s instance attributes, or nothing for objects (frames, modules, containers) that have none to name."""
    # type(), not isinstance(), on the objects gc hands back: isinstance reads __class__ (lazy modules warn).
    if issubclass(type(obj), (dict, list, tuple, set, types.FrameType, types.ModuleType, types.FunctionType)):
        return {}
    try:
        attributes = object.__getattribute__(obj, "__dict__")  # not getattr: no user __getattr__ runs
    except AttributeError:
        return {}
    return attributes if isinstance(attributes, dict) else {}


def _via(container: Any, local_vars: list[tuple[str, Any, str]], skip: set[int]) -> str:
    """Where ``container`` (a list, dict or object) is reachable from: a variable on the stack, an attribute,
    a module global; empty when none is found."""
    for var, value, where in local_vars:
        if value is container:
            return f", variable '{var}' of {where}"
    for ref in gc.get_referrers(container):
        if id(ref) in skip:
            continue
        if issubclass(type(ref), types.ModuleType):
            continue
        name = next((k for k, v in _attributes(ref).items() if v is container), None)
        if name is not None:
            return f", attribute '{name}' of a {type(ref).__name__} object"
        if type(ref) is dict:
            module = next((m for m in gc.get_referrers(ref)
                           if issubclass(type(m), types.ModuleType) and m.__dict__ is ref), None)
            key = next((k for k, v in ref.items() if v is container and isinstance(k, str)), None)
            if module is not None and key is not None:
                return f", global '{key}' of module {module.__name__}"
    return ""


def _holders(tensor: Any, frame: Any, skip: set[int]) -> list[str]:
    """Who refers to ``tensor``, named by its container: a variable of a function on the stack, an attribute
    of an object, a global of a module, a key of a dict or an item of a list (and who holds those)."""
    local_vars = []  # the user's loop is on the stack below optimizer.step()
    while frame is not None:
        code = frame.f_code
        where = f"{code.co_name}() ({code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})"
        local_vars.extend((var, value, where) for var, value in frame.f_locals.items())
        skip.add(id(frame.f_locals))  # each frame's variables are named above, not as the keys of a dict
        frame = frame.f_back
    skip.add(id(local_vars))
    names = [f"variable '{var}' of {where}" for var, value, where in local_vars if value is tensor]
    for ref in gc.get_referrers(tensor):
        if id(ref) in skip or issubclass(type(ref), types.FrameType):
            continue
        if issubclass(type(ref), list):
            names.append(f"a list of {len(ref)} items{_via(ref, local_vars, skip)}")
        elif issubclass(type(ref), dict):
            keys = [k for k, v in ref.items() if v is tensor and isinstance(k, str)]
            owner = next((o for o in gc.get_referrers(ref) if id(o) not in skip and not issubclass(type(o), dict)
                          and (issubclass(type(o), types.ModuleType) or _attributes(o) is ref)), None)
            if issubclass(type(owner), types.ModuleType):
                names.extend(f"global '{k}' of module {owner.__name__}" for k in keys)
            elif owner is not None:
                names.extend(f"attribute '{k}' of a {type(owner).__name__} object{_via(owner, local_vars, skip)}"
                             for k in keys)
            else:
                names.extend(f"key '{k}' of a dict{_via(ref, local_vars, skip)}" for k in keys)
        else:
            names.extend(f"attribute '{k}' of a {type(ref).__name__} object{_via(ref, local_vars, skip)}"
                         for k, v in _attributes(ref).items() if v is tensor)
    return names


def assert_no_graph_retained(optimizer: Any, run: Callable[[], Any], *, growth: float = 2.0,
                             min_steps: int = 3) -> Any:
    """Run ``run()`` (your training loop): no autograd graph grows from one optimizer step to the next.

    At each ``optimizer.step()``, the autograd nodes made during ``run`` and reachable
    from live tensors are counted (graphs alive before ``run`` are left out, so the
    verdict does not depend on what else the process holds). If that count grows at
    every step for ``min_steps`` steps and ends at least ``growth`` times its first value,
    a tensor is keeping every iteration's graph: the failure names the tensor holding the
    largest graph and what holds it (a variable, an attribute, a global, a dict's key or
    a list, and who holds that). Returns what ``run`` returns.

    For a loop that builds its own optimizer, the watched form needs no optimizer up front:
    ``with torchcheck_watch(select=["TRN106"]): train(model, loader)`` (the ``torchcheck_watch``
    fixture, docs/plugin/watch.md) runs the TRN106 runtime check, where your version has it, as
    the loop runs. This assertion also names what holds the graphs.
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

    def live_tensors() -> list[Any]:
        """Every live tensor that carries an autograd graph."""
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
        return found

    # Graphs alive before run() (the test's own, a fixture's) are not the loop's: counted, a large one would
    # dwarf the growth and the verdict would depend on what else the process holds. Only their nodes' numbers
    # are kept, so the check does not keep them alive.
    before = _numbers([t.grad_fn for t in live_tensors()])

    def live_graphs() -> tuple[int, list[tuple[int, Any]]]:
        """The autograd nodes made during run() reachable from live tensors (each counted once), and each
        tensor's share of them."""
        found = live_tensors()
        seen: set[int] = set()
        total = sum(_graph_size(t.grad_fn, seen, before) for t in found)
        return total, [(_graph_size(t.grad_fn, None, before), t) for t in found]

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
