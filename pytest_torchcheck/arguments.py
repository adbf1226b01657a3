"""The arguments users hand to torchcheck's assertions (callables, models, optimizers), checked before they run.

A ``loss_fn`` with the wrong signature would otherwise fail deep inside the check (an
optimizer step hook, a forward hook, ``torch.autograd.grad``) with a bare ``TypeError``
and torch's frames in the traceback. Checked up front, the error names the argument, the
callable as it was defined (its signature and where), and the call the check makes.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from pytest_torchcheck.errors import TorchcheckUsageError


def describe(fn: Any) -> str:
    """``loss_fn(batch)`` (test_train.py:12): the callable's name, signature and definition site."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    name = name.replace(".<locals>", "")
    try:
        signature = str(inspect.signature(fn))
    except (TypeError, ValueError):
        signature = "(...)"
    code = getattr(inspect.unwrap(fn) if callable(fn) else fn, "__code__", None)
    where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code is not None else ""
    return f"{name}{signature}{where}"


def check_callable(check: str, argument: str, fn: Any, args: tuple = (), kwargs: dict | None = None, *,
                   call: str, expected: str = "") -> None:
    """Raise a usage error unless ``fn`` is callable as ``fn(*args, **kwargs)``.

    ``call`` is how the check calls it (``loss_fn(model, batch)``); ``expected`` says what it is
    for and must return. A callable whose signature cannot be read (a builtin) passes: the call
    itself will tell.
    """
    __tracebackhide__ = True
    line = f"\n  expected: {call}" + (f": {expected}" if expected else "")
    if not callable(fn):
        raise TorchcheckUsageError(f"{check}: {argument} must be callable, got {type(fn).__name__} {_short(fn)}"
                                   + line)
    if isinstance(fn, type) and callable(getattr(fn, "forward", None)):
        # nn.MSELoss instead of nn.MSELoss(): its __init__ may even take the arguments, and return a module.
        raise TorchcheckUsageError(f"{check}: {argument} is the class {fn.__name__}, not a loss or function; pass "
                                   f"an instance, {argument}={fn.__name__}()" + line)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **(kwargs or {}))
    except TypeError as e:
        raise TorchcheckUsageError(f"{check}: {argument}={describe(fn)} cannot be called as {call}: {e}"
                                   + line) from None


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def what(value: Any) -> str:
    """``a tuple of 2 items (Tensor, Tensor)``, ``float 0.5``: a returned value, in a few words."""
    if isinstance(value, (tuple, list)):
        kinds = ", ".join(type(v).__name__ for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} items ({kinds})"
    if hasattr(value, "shape") and hasattr(value, "requires_grad"):
        return f"a tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {_short(value)}"


def check_number(check: str, name: str, value: Any, *, positive: bool = False) -> float:
    """``value`` as a float when it is a finite number (positive, or non-negative); a usage error naming it else."""
    __tracebackhide__ = True
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        (value > 0 if positive else value >= 0)
    if not ok:
        raise TorchcheckUsageError(f"{check}: {name} must be a {'positive' if positive else 'non-negative'} "
                                   f"finite number, got {value!r}")
    return float(value)


def check_module(check: str, argument: str, value: Any) -> None:
    """Raise a usage error unless ``value`` is a ``torch.nn.Module``."""
    __tracebackhide__ = True
    import torch

    if not isinstance(value, torch.nn.Module):
        raise TorchcheckUsageError(f"{check}: {argument} must be a torch.nn.Module, got {type(value).__name__} "
                                   f"{_short(value)}")


def check_optimizer(check: str, argument: str, value: Any) -> None:
    """Raise a usage error unless ``value`` is a ``torch.optim.Optimizer`` (the checks hook its ``step()``)."""
    __tracebackhide__ = True
    import torch

    if not isinstance(value, torch.optim.Optimizer):
        raise TorchcheckUsageError(f"{check}: {argument} must be the torch.optim.Optimizer your loop steps (its "
                                   f"step() is watched), got {type(value).__name__} {_short(value)}")


def call_of(name: str, args: tuple, kwargs: dict) -> str:
    """``evaluate(DataLoader, split=str)``: how ``name`` is called with these arguments, by their types."""
    shown = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return f"{name}({', '.join(shown)})"
