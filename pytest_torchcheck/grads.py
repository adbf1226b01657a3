"""Gradients at each optimizer step are those of the micro-batches since the previous step, averaged.

The check runs the user's own training loop over a recorded iterable of batches. At
every ``optimizer.step()`` (a step pre-hook, so parameters are still the ones the
forward passes used) it recomputes, with ``torch.autograd.grad`` and without touching
``.grad``, the gradient of the mean loss over the micro-batches drawn since the
previous step, and compares it with what ``.grad`` holds. A missing or misplaced
``zero_grad()`` and broken gradient accumulation give a different ``.grad`` even when
the loss still falls (with a (B)CE loss, accumulated gradients still point downhill).

Three things make a correct loop's ``.grad`` differ from a naive re-run, and each is undone
rather than reported: a random forward (dropout, sampled noise) is re-run from the RNG state
saved when its batch was drawn; ``clip_grad_norm_`` is watched while the loop runs and the
recomputed gradient is clipped the same way; the loop gets a copy of every batch (containers
copied, tensors cloned, as a DataLoader hands out fresh ones), so ``batch.pop("labels")`` or
an in-place ``x.div_(255)`` leaves the batch ``loss_fn`` re-runs intact.
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from pytest_torchcheck.arguments import (check_callable, check_module, check_number, check_optimizer, describe,
                                         what)
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

if TYPE_CHECKING:
    import torch

def _rng_state() -> tuple[Any, Any]:
    """Torch's CPU RNG state, and CUDA's when CUDA is already initialised (asking never initialises it)."""
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state: tuple[Any, Any]) -> None:
    import torch

    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def _fresh(batch: Any) -> Any:
    """The copy the loop gets: containers copied and tensors cloned, as a DataLoader hands out new ones each pass.

    The loop may then pop keys or edit tensors in place; the batch ``loss_fn`` re-runs stays as given.
    """
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.detach().clone().requires_grad_(batch.requires_grad)
    if isinstance(batch, dict):
        fresh = copy.copy(batch)  # keeps the type (OrderedDict, a dict subclass)
        for key, value in batch.items():
            fresh[key] = _fresh(value)
        return fresh
    if isinstance(batch, list):
        return [_fresh(x) for x in batch]
    if isinstance(batch, tuple):
        items = [_fresh(x) for x in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)
    return batch


class _Recorded:
    """The batches, as an iterable that remembers which were drawn, and the RNG state at each draw.

    Each pass restarts the data. The loop's forward of a batch follows its draw, so the RNG state at the
    draw is the one that forward (its dropout, its noise) started from.
    """

    def __init__(self, batches: Sequence[Any]) -> None:
        self.batches = batches
        self.drawn: list[Any] = []
        self.rng: list[tuple[Any, Any]] = []

    def __iter__(self) -> Iterator[Any]:
        for batch in self.batches:
            self.drawn.append(batch)
            self.rng.append(_rng_state())
            yield _fresh(batch)

    def __len__(self) -> int:
        return len(self.batches)

    def __repr__(self) -> str:  # shown as the loop's argument in a failure's traceback
        return f"<the {len(self.batches)} batches given to assert_step_gradients, {len(self.drawn)} drawn so far>"


def _index(batches: Sequence[Any], batch: Any) -> str:
    return next((str(i) for i, b in enumerate(batches) if b is batch), "?")


def assert_step_gradients(model: "torch.nn.Module", optimizer: "torch.optim.Optimizer",
                          run: Callable[[Any], Any], batches: Sequence[Any],
                          loss_fn: Callable[["torch.nn.Module", Any], "torch.Tensor"], *,
                          rtol: float = 1e-4, atol: float = 1e-6) -> Any:
    """``run(batches)`` runs your training loop; every step applies the averaged gradient of its micro-batches.

    ``batches`` is a list of micro-batches; ``run`` receives an iterable over it (iterate
    it as you would a DataLoader, as many passes as you like). ``loss_fn(model, batch)``
    is the mean loss of one micro-batch, as your loop computes it before any division
    for accumulation. At each ``optimizer.step()``, the ``.grad`` of every parameter the
    optimizer holds must equal the gradient of the mean of ``loss_fn`` over the
    micro-batches drawn since the previous step (``|grad - expected| <= atol + rtol *
    |expected|``). One micro-batch per step checks that gradients were cleared; N per
    step checks gradient accumulation. Fails inside the wrong ``step()`` (the traceback
    ends at your line) naming the step, the parameter and the likely cause.

    A random forward (dropout, noise) is re-run from the RNG state saved when its batch
    was drawn; ``torch.nn.utils.clip_grad_norm_`` in the loop is applied to the expected
    gradient too; the loop gets a copy of each batch, so it may change it. Returns what
    ``run`` returns.

    A loop that builds its own optimizer, or draws from its own DataLoader, cannot be handed
    over this way without rewiring it; its watched form checks it as it runs, with no
    monkeypatching: ``with torchcheck_watch(select=["TRN101", "TRN102"]): train(model, loader)``
    (the ``torchcheck_watch`` fixture, docs/plugin/watch.md) fails on gradients cleared between
    ``backward()`` and ``step()`` or never cleared. Use this assertion to check the values too
    (accumulation averaged, the loss scale, clipping).
    """
    __tracebackhide__ = True
    import torch

    check = "assert_step_gradients"
    check_module(check, "model", model)
    check_optimizer(check, "optimizer", optimizer)
    rtol, atol = check_number(check, "rtol", rtol), check_number(check, "atol", atol)
    if not hasattr(batches, "__len__") or len(batches) == 0:
        raise TorchcheckUsageError(f"{check}: batches must be a non-empty list of micro-batches, got "
                                   f"{type(batches).__name__}")
    check_callable(check, "run", run, (batches,), call="run(batches)",
                   expected="your training loop, run over the batches it is given")
    check_callable(check, "loss_fn", loss_fn, (model, None), call="loss_fn(model, batch)",
                   expected="the mean loss of that one micro-batch, a scalar tensor computed from the model")
    names = {id(p): n for n, p in model.named_parameters()}
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    recorded = _Recorded(batches)
    state: dict[str, Any] = {"step": 0, "since": 0, "previous": None}
    clipped: dict[int, float] = {}  # id(parameter) -> factor clip_grad_norm_ scaled its .grad by, this step

    def expected_grads(micro: list[Any], replay: list[tuple[Any, Any]] | None) -> list[list[Any]]:
        """Each micro-batch's gradient, computed on the side: .grad, buffers and the RNG are left as they were.

        ``replay``: the RNG state to start each micro-batch's forward from (None: go on from the current one).
        """
        __tracebackhide__ = True
        buffers = [(b, b.detach().clone()) for b in model.buffers()]
        per_batch = []
        saved = _rng_state()
        try:
            with torch.enable_grad():
                for i, batch in enumerate(micro):
                    if replay is not None:
                        _set_rng_state(replay[i])
                    try:
                        loss = loss_fn(model, batch)
                    except (TorchcheckFailure, TorchcheckUsageError):
                        raise  # another check (a NaN guard) that fired inside loss_fn speaks for itself
                    except Exception as error:
                        raise TorchcheckUsageError(
                            f"{check}: loss_fn={describe(loss_fn)} raised {type(error).__name__}: {error} when "
                            f"re-run on batches[{_index(batches, batch)}] at optimizer step {state['step']}\n"
                            "  it is given the batch as passed to assert_step_gradients (the loop got a copy): "
                            "loss_fn must compute the loss from that batch itself") from error
                    _check_loss(loss, batch)
                    grads = torch.autograd.grad(loss, params, allow_unused=True)
                    per_batch.append([torch.zeros_like(p) if g is None else g.detach() for p, g in zip(params, grads)])
        finally:
            _set_rng_state(saved)
            with torch.no_grad():
                for b, value in buffers:
                    b.copy_(value)
        return per_batch

    def pre_step(opt: Any, args: Any, kwargs: Any) -> None:
        __tracebackhide__ = True
        state["step"] += 1
        micro = recorded.drawn[state["since"]:]
        replay = recorded.rng[state["since"]:]
        state["since"] = len(recorded.drawn)
        factors = [clipped.get(id(p), 1.0) for p in params]
        clipped.clear()
        if not micro:
            return  # a step with no new batch: nothing to compare against
        per_batch = expected_grads(micro, replay)
        n = len(micro)
        expected = [sum(g[i] for g in per_batch) / n for i in range(len(params))]
        actual = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for p in params]

        def close(a: list[Any], b: list[Any]) -> bool:
            return all(torch.allclose(x.double(), y.double(), rtol=rtol, atol=atol) for x, y in zip(a, b))

        # clip_grad_norm_ scaled .grad by a factor computed from .grad itself: a correct .grad, clipped, is
        # the expected gradient times that factor; a wrong one (stale, summed) is not.
        if close(actual, expected) or close(actual, [f * e for f, e in zip(factors, expected)]):
            state["previous"] = actual
            return
        _fail(state["step"], n, actual, expected, per_batch, state["previous"], close, micro, factors)

    def _fail(step: int, n: int, actual: list[Any], expected: list[Any], per_batch: list[list[Any]],
              previous: list[Any] | None, close: Callable[[list[Any], list[Any]], bool], micro: list[Any],
              factors: list[float]) -> None:
        __tracebackhide__ = True
        worst = max(range(len(params)), key=lambda i: float((actual[i].double() - expected[i].double()).abs().max()))
        a, e = actual[worst].double(), expected[worst].double()
        name = names.get(id(params[worst]), f"param_groups parameter {worst}")
        norm_a = sum(float(x.double().norm()) ** 2 for x in actual) ** 0.5
        norm_e = sum(float(x.double().norm()) ** 2 for x in expected) ** 0.5
        window = f"the {n} micro-batches drawn since the previous step" if n > 1 else \
            "the one micro-batch drawn since the previous step"
        scale = _uniform_scale(actual, expected)
        clipping = any(f != 1.0 for f in factors)
        if clipping:
            # compare the diagnoses below with .grad as it was before clip_grad_norm_
            actual = [a / f if f > 0 else a for a, f in zip(actual, factors)]
        if norm_a == 0:
            cause = ("every gradient is zero or None at step(): zero_grad() (or p.grad = None) between backward() "
                     "and step(), or a loss detached from the model")
        elif n > 1 and close(actual, [n * x for x in expected]):
            cause = (f"the {n} micro-batch gradients are summed, not averaged: divide each micro-batch loss by the "
                     f"number of accumulation steps ({n}) before backward(), or the effective learning rate is "
                     f"{n}x too large")
        elif n > 1 and (close(actual, per_batch[-1]) or close(actual, [x / n for x in per_batch[-1]])):
            cause = ("only the last micro-batch's gradient is left: zero_grad() runs inside the accumulation window "
                     "(every micro-batch) instead of once per optimizer step")
        elif previous is not None and close(actual, [p + x for p, x in zip(previous, expected)]):
            cause = (f"the gradients of step {step - 1} are still in .grad: zero_grad() is not called between "
                     "optimizer steps (missing, or only once per epoch), so every step applies the sum of all "
                     "gradients so far")
        elif n > 1 and close(actual, [x / n for x in expected]):
            cause = f"the gradient is divided by the number of accumulation steps twice ({n} * {n})"
        elif scale is not None and not clipping:
            cause = (f".grad is the expected gradient scaled by {scale:.4g}: gradient clipping that assert_step_"
                     "gradients does not see (only torch.nn.utils.clip_grad_norm_ is followed; clip_grad_value_ or "
                     "a hand-written clip), a loss multiplied or divided by a constant, or a GradScaler whose "
                     "unscale_() is missing")
        elif random_forward(micro):
            cause = ("the forward is random (two re-runs of loss_fn on the same batch give different gradients) and "
                     "replaying the RNG state saved when the batch was drawn did not reproduce the loop's: the loop "
                     "draws random numbers between drawing a batch and its forward (augmentation, a random crop), "
                     "draws its batches ahead of the forward, or uses Python's or NumPy's RNG; draw the randomness "
                     "inside forward from torch's RNG, or turn it off for this test (dropout p=0, model.eval())")
        else:
            cause = ("the gradient in .grad is not the one of the loss over these batches: a hook that edits "
                     "gradients, clip_grad_value_, a loss computed on other data than loss_fn(model, batch), or "
                     "gradients accumulated from an earlier backward (retain_graph, a second loss)")
        raise TorchcheckFailure(
            f"assert_step_gradients: at optimizer step {step}, .grad is not the mean gradient of {window}\n"
            f"  worst parameter {name} {tuple(a.shape)}: max abs difference {float((a - e).abs().max()):.4g}; "
            f".grad norm {float(a.norm()):.4g}, expected norm {float(e.norm()):.4g} (all parameters: "
            f"{norm_a:.4g} vs {norm_e:.4g}; rtol={rtol:g}, atol={atol:g})\n"
            f"  likely cause: {cause}", "assert_step_gradients")

    def random_forward(micro: list[Any]) -> bool:
        """Whether two re-runs of loss_fn, from different RNG states, give different gradients."""
        __tracebackhide__ = True
        first, second = expected_grads(micro, None), None
        saved = _rng_state()
        try:
            # a different stream, restored below (torch.manual_seed would queue a seed for CUDA's later start)
            other = (torch.initial_seed() + 1) % 2 ** 63
            torch.default_generator.manual_seed(other)
            if torch.cuda.is_initialized():
                torch.cuda.manual_seed_all(other)
            second = expected_grads(micro, None)
        finally:
            _set_rng_state(saved)
        return not all(close_each(a, b) for x, y in zip(first, second) for a, b in zip(x, y))

    def close_each(a: Any, b: Any) -> bool:
        return bool(torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol))

    def clip_watcher(original: Callable[..., Any]) -> Callable[..., Any]:
        """torch's _clip_grads_with_norm_(parameters, max_norm, total_norm, ...), recording each scale factor."""

        def clip(parameters: Any, max_norm: float, total_norm: Any, *args: Any, **kwargs: Any) -> Any:
            parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            factor = min(1.0, float(max_norm) / (float(total_norm) + 1e-6))  # torch's own clip_coef
            for p in parameters:
                clipped[id(p)] = clipped.get(id(p), 1.0) * factor
            return original(parameters, max_norm, total_norm, *args, **kwargs)
        return clip

    def _check_loss(loss: Any, batch: Any) -> None:
        __tracebackhide__ = True
        if isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.requires_grad:
            return
        if not isinstance(loss, torch.Tensor):
            got = what(loss)
        elif loss.numel() != 1:
            got = f"{what(loss)} (reduce it to the mean loss, .mean())"
        else:
            got = "a tensor that does not require grad (computed under torch.no_grad(), detached, or .item())"
        raise TorchcheckUsageError(
            f"{check}: loss_fn={describe(loss_fn)} returned {got} for batches[{_index(batches, batch)}]\n"
            "  expected: loss_fn(model, batch): the mean loss of that one micro-batch, a scalar tensor computed "
            "from the model")

    handle = optimizer.register_step_pre_hook(pre_step)
    try:
        with _watching_clip(torch, clip_watcher):
            result = run(recorded)
    finally:
        handle.remove()
    if state["step"] == 0:
        raise TorchcheckUsageError(f"assert_step_gradients: run never called {type(optimizer).__name__}.step(); "
                                   "pass the optimizer your loop steps")
    return result


def _uniform_scale(actual: list[Any], expected: list[Any]) -> float | None:
    """c when every parameter's .grad is c times its expected gradient (c != 1), else None."""
    import torch

    flat_a = torch.cat([a.double().flatten() for a in actual])
    flat_e = torch.cat([e.double().flatten() for e in expected])
    denominator = float(flat_e @ flat_e)
    if denominator == 0:
        return None
    c = float(flat_a @ flat_e) / denominator
    if c == 0 or abs(c - 1) < 1e-3 or not torch.allclose(flat_a, c * flat_e, rtol=1e-3, atol=1e-7):
        return None
    return c


@contextlib.contextmanager
def _watching_clip(torch: Any, watcher: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    """While the loop runs, clip_grad_norm_ reports the factor it scales .grad by.

    The module global that clip_grad_norm_ calls is replaced, so the loop's spelling does not matter
    (``from torch.nn.utils import clip_grad_norm_`` included). torch < 2.6 has no such function: then
    the loop's clipping shows as a uniformly scaled gradient, named as such.
    """
    module = torch.nn.utils.clip_grad
    original = getattr(module, "_clip_grads_with_norm_", None)
    if original is None:
        yield
        return
    module._clip_grads_with_norm_ = watcher(original)
    try:
        yield
    finally:
        module._clip_grads_with_norm_ = original
