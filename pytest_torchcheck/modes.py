"""Module modes: evaluation runs every module in eval mode under no-grad, and training resumes in train mode.

Both checks watch every module call through a global forward pre-hook while the user's
own code runs, so they see what really ran, not what the code meant to do:
``model.eval()`` forgotten, ``model.train()`` not called again after validation, a
``train()`` override that does not propagate, an evaluation that records autograd graphs.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any, Callable

from pytest_torchcheck.arguments import call_of, check_callable, check_module, check_optimizer
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

if TYPE_CHECKING:
    import torch

_SHOWN = 6  # module names listed in a message before "and N more"
# Layers whose output is random in training mode (class names, so subclasses defined elsewhere are not guessed at).
STOCHASTIC_LAYERS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                               "FeatureAlphaDropout", "RReLU"})


def random_in_training(module: Any) -> bool:
    """A layer that draws random numbers in its forward pass in training mode (dropout with p > 0, RReLU)."""
    return type(module).__name__ in STOCHASTIC_LAYERS and getattr(module, "p", 1.0) > 0


class _ModuleCalls:
    """Calls ``check(module, name, grad_enabled)`` for every call of a module of ``model`` while active."""

    def __init__(self, model: "torch.nn.Module", ignore: tuple[str, ...], check: Callable[..., None]) -> None:
        # Qualified names relative to the model (what ``ignore`` patterns match); the model itself is "".
        self.names = {id(m): q for q, m in model.named_modules()}
        self.top = type(model).__name__
        self.ignore = ignore
        self.check = check
        self.calls = 0
        self._handle: Any = None

    def ignored(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self.ignore)

    def shown(self, name: str) -> str:
        return f"{self.top}.{name}" if name else self.top

    def __enter__(self) -> "_ModuleCalls":
        import torch
        from torch.nn.modules import module as module_mod

        def pre_hook(module: Any, args: Any) -> None:
            __tracebackhide__ = True
            name = self.names.get(id(module))
            if name is None:
                return
            self.calls += 1
            self.check(module, name, torch.is_grad_enabled() and not torch.is_inference_mode_enabled())

        self._handle = module_mod.register_module_forward_pre_hook(pre_hook)
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.remove()


def _listing(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    shown = ", ".join(unique[:_SHOWN])
    return shown + (f" and {len(unique) - _SHOWN} more" if len(unique) > _SHOWN else "")


def _check_ignore(check: str, ignore: Any) -> tuple[str, ...]:
    __tracebackhide__ = True
    if isinstance(ignore, str) or not all(isinstance(p, str) for p in ignore):
        raise TorchcheckUsageError(f"{check}: ignore must be a list of glob patterns (strings), got {ignore!r}")
    return tuple(ignore)


def assert_eval_mode(model: "torch.nn.Module", evaluate: Callable[..., Any], *args: Any,
                     ignore: tuple[str, ...] | list[str] = (), require_no_grad: bool = True, **kwargs: Any) -> Any:
    """Run ``evaluate(*args, **kwargs)``: every module of ``model`` it calls is in eval mode, under no-grad.

    Returns what ``evaluate`` returns. Fails at the first call of the model (or of any of
    its submodules) made in training mode or with autograd recording, so the traceback
    ends at that line of ``evaluate``; the message says which of the two failed and names
    every module about to run in training mode. ``ignore`` takes glob patterns of qualified
    module names that are exempt. ``require_no_grad=False`` checks the mode alone, for an
    evaluation that records autograd on purpose (or whose no-grad is checked elsewhere).
    """
    __tracebackhide__ = True
    ignore = _check_ignore("assert_eval_mode", ignore)
    if not isinstance(require_no_grad, bool):
        raise TorchcheckUsageError(f"assert_eval_mode: require_no_grad must be True (eval mode and no-grad) or False "
                                   f"(eval mode only), got {require_no_grad!r}")
    check_module("assert_eval_mode", "model", model)
    check_callable("assert_eval_mode", "evaluate", evaluate, args, kwargs, call=call_of("evaluate", args, kwargs),
                   expected="your evaluation, called with the arguments given after it")
    what = getattr(evaluate, "__name__", "evaluate")

    def check(module: Any, name: str, grad: bool) -> None:
        __tracebackhide__ = True
        training = [(watch.shown(q), type(m).__name__) for q, m in _subtree(module, name)
                    if m.training and not watch.ignored(q)]
        grad = grad and require_no_grad
        if not training and not grad:
            return
        problems = []
        if training:
            kinds = sorted({kind for _, kind in training})
            problems.append(f"  {len(training)} module(s) in training mode: {_listing([q for q, _ in training])} "
                            f"({', '.join(kinds)})\n"
                            "    likely cause: model.eval() is not called before evaluating (or model.train() is "
                            "called inside it, or a train() override does not reach every submodule): dropout "
                            "stays active and batch norm normalises with, and updates, batch statistics")
        if grad:
            problems.append("  autograd is recording: the call is outside torch.no_grad() / torch.inference_mode()\n"
                            "    likely cause: evaluation without no-grad keeps every activation for a backward "
                            "that never comes (memory, and time)")
        failed = " and ".join(["in training mode"] * bool(training) + ["with autograd recording"] * grad)
        raise TorchcheckFailure(f"assert_eval_mode: {what} called '{watch.shown(name)}' "
                                f"({type(module).__name__}) outside evaluation mode: {failed}\n" + "\n".join(problems),
                                "assert_eval_mode")

    with _ModuleCalls(model, ignore, check) as watch:
        result = evaluate(*args, **kwargs)
    if not watch.calls:
        raise TorchcheckUsageError(f"assert_eval_mode: {what} never called {type(model).__name__} or any of its "
                                   "submodules; pass the model it evaluates")
    return result


def _subtree(module: Any, name: str) -> list[tuple[str, Any]]:
    return [(f"{name}.{q}" if name and q else q or name, m) for q, m in module.named_modules()]


def assert_train_mode(model: "torch.nn.Module", optimizer: "torch.optim.Optimizer", run: Callable[[], Any], *,
                      ignore: tuple[str, ...] | list[str] = ()) -> Any:
    """Run ``run()`` (your training loop, validation included): every optimizer step trains in train mode.

    At each ``optimizer.step()``, every module of ``model`` called with autograd
    recording since the previous step must have been in training mode. Forward passes
    under no-grad (your validation) are not training and are not checked. Fails inside
    the first ``step()`` that follows a forward in eval mode, so the traceback ends at
    your ``optimizer.step()`` line; the message names the modules and the step. The
    classic cause is ``model.eval()`` for validation without ``model.train()`` before
    the next epoch. ``ignore`` exempts modules kept in eval mode on purpose (a frozen
    backbone's batch norm). Returns what ``run`` returns.

    For a loop that builds its own optimizer, the watched form needs no optimizer up front:
    ``with torchcheck_watch(select=["TRN602", "TRN603"]): trainer.fit(epochs=2)`` (the
    ``torchcheck_watch`` fixture, docs/plugin/watch.md) runs the train/eval mode runtime checks,
    where your version has them, as the loop runs; ``ignore=`` is this assertion's only.
    """
    __tracebackhide__ = True
    ignore = _check_ignore("assert_train_mode", ignore)
    check_module("assert_train_mode", "model", model)
    check_optimizer("assert_train_mode", "optimizer", optimizer)
    check_callable("assert_train_mode", "run", run, call="run()",
                   expected="your training loop, validation included, with no arguments")
    steps = [0]
    frozen: dict[str, str] = {}

    def check(module: Any, name: str, grad: bool) -> None:
        if grad and not module.training and not watch.ignored(name):
            frozen.setdefault(watch.shown(name), type(module).__name__)

    def pre_step(opt: Any, args: Any, kwargs: Any) -> None:
        __tracebackhide__ = True
        steps[0] += 1
        if not frozen:
            return
        names = list(frozen)
        kinds = sorted(set(frozen.values()))
        frozen.clear()
        raise TorchcheckFailure(
            f"assert_train_mode: optimizer step {steps[0]} trained {type(model).__name__} with {len(names)} "
            f"module(s) in eval mode: {_listing(names)} ({', '.join(kinds)})\n"
            "  likely cause: model.eval() was called (for validation, or after loading) and model.train() was not "
            "called before training resumed: dropout is off and batch norm normalises with stale running "
            "statistics while the optimizer steps", "assert_train_mode")

    with _ModuleCalls(model, ignore, check) as watch:
        handle = optimizer.register_step_pre_hook(pre_step)
        try:
            result = run()
        finally:
            handle.remove()
    if steps[0] == 0:
        raise TorchcheckUsageError(f"assert_train_mode: run never called {type(optimizer).__name__}.step(); pass "
                                   "the optimizer your loop steps")
    return result
