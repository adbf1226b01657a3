"""Gradients at each optimizer step are those of the micro-batches since the previous step, averaged.

The check runs the user's own training loop over a recorded iterable of batches. At
every ``optimizer.step()`` (a step pre-hook, so parameters are still the ones the
forward passes used) it recomputes, with ``torch.autograd.grad`` and without touching
``.grad``, the gradient of the mean loss over the micro-batches drawn since the
previous step, and compares it with what ``.grad`` holds. A missing or misplaced
``zero_grad()`` and broken gradient accumulation give a different ``.grad`` even when
the loss still falls (with a (B)CE loss, accumulated gradients still point downhill).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from pytest_torchcheck.arguments import check_callable, check_module, check_optimizer, describe, what
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError
from pytest_torchcheck.modes import random_in_training

if TYPE_CHECKING:
    import torch

class _Recorded:
    """The batches, as an iterable that remembers how many were drawn (each pass restarts the data)."""

    def __init__(self, batches: Sequence[Any]) -> None:
        self.batches = batches
        self.drawn: list[Any] = []

    def __iter__(self) -> Iterator[Any]:
        for batch in self.batches:
            self.drawn.append(batch)
            yield batch

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

    The model must compute the same loss twice for the same batch: dropout layers
    in training mode are a usage error. Gradient clipping changes ``.grad`` and is
    reported as a difference: check the loop without it. Returns what ``run`` returns.
    """
    __tracebackhide__ = True
    import torch

    check = "assert_step_gradients"
    check_module(check, "model", model)
    check_optimizer(check, "optimizer", optimizer)
    if not hasattr(batches, "__len__") or len(batches) == 0:
        raise TorchcheckUsageError(f"{check}: batches must be a non-empty list of micro-batches, got "
                                   f"{type(batches).__name__}")
    check_callable(check, "run", run, (batches,), call="run(batches)",
                   expected="your training loop, run over the batches it is given")
    check_callable(check, "loss_fn", loss_fn, (model, None), call="loss_fn(model, batch)",
                   expected="the mean loss of that one micro-batch, a scalar tensor computed from the model")
    random_layers = [n for n, m in model.named_modules() if m.training and random_in_training(m)]
    if random_layers:
        raise TorchcheckUsageError(
            f"assert_step_gradients: dropout in training mode ({', '.join(random_layers)}) makes every forward "
            "different, so gradients cannot be recomputed; set p=0 for this test (or build the model without it)")
    names = {id(p): n for n, p in model.named_parameters()}
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    recorded = _Recorded(batches)
    state = {"step": 0, "since": 0, "previous": None}

    def expected_grads(micro: list[Any]) -> list[list[Any]]:
        """Each micro-batch's gradient, computed on the side: .grad, buffers and the RNG are left as they were."""
        __tracebackhide__ = True
        buffers = [(b, b.detach().clone()) for b in model.buffers()]
        per_batch = []
        try:
            with torch.random.fork_rng(devices=[]), torch.enable_grad():
                for batch in micro:
                    loss = loss_fn(model, batch)
                    _check_loss(loss, batch)
                    grads = torch.autograd.grad(loss, params, allow_unused=True)
                    per_batch.append([torch.zeros_like(p) if g is None else g.detach() for p, g in zip(params, grads)])
        finally:
            with torch.no_grad():
                for b, saved in buffers:
                    b.copy_(saved)
        return per_batch

    def pre_step(opt: Any, args: Any, kwargs: Any) -> None:
        __tracebackhide__ = True
        state["step"] += 1
        micro = recorded.drawn[state["since"]:]
        state["since"] = len(recorded.drawn)
        if not micro:
            return  # a step with no new batch: nothing to compare against
        per_batch = expected_grads(micro)
        n = len(micro)
        expected = [sum(g[i] for g in per_batch) / n for i in range(len(params))]
        actual = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for p in params]

        def close(a: list[Any], b: list[Any]) -> bool:
            return all(torch.allclose(x.double(), y.double(), rtol=rtol, atol=atol) for x, y in zip(a, b))

        if close(actual, expected):
            state["previous"] = actual
            return
        _fail(state["step"], n, actual, expected, per_batch, state["previous"], close)

    def _fail(step: int, n: int, actual: list[Any], expected: list[Any], per_batch: list[list[Any]],
              previous: list[Any] | None, close: Callable[[list[Any], list[Any]], bool]) -> None:
        __tracebackhide__ = True
        worst = max(range(len(params)), key=lambda i: float((actual[i].double() - expected[i].double()).abs().max()))
        a, e = actual[worst].double(), expected[worst].double()
        name = names.get(id(params[worst]), f"param_groups parameter {worst}")
        norm_a = sum(float(x.double().norm()) ** 2 for x in actual) ** 0.5
        norm_e = sum(float(x.double().norm()) ** 2 for x in expected) ** 0.5
        window = f"the {n} micro-batches drawn since the previous step" if n > 1 else \
            "the one micro-batch drawn since the previous step"
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
        else:
            cause = ("the gradient in .grad is not the one of the loss over these batches: gradient clipping or "
                     "scaling before step(), a hook that edits gradients, a loss computed on other data, or "
                     "gradients accumulated from an earlier backward (retain_graph, a second loss)")
        raise TorchcheckFailure(
            f"assert_step_gradients: at optimizer step {step}, .grad is not the mean gradient of {window}\n"
            f"  worst parameter {name} {tuple(a.shape)}: max abs difference {float((a - e).abs().max()):.4g}; "
            f".grad norm {float(a.norm()):.4g}, expected norm {float(e.norm()):.4g} (all parameters: "
            f"{norm_a:.4g} vs {norm_e:.4g}; rtol={rtol:g}, atol={atol:g})\n"
            f"  likely cause: {cause}", "assert_step_gradients")

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
        result = run(recorded)
    finally:
        handle.remove()
    if state["step"] == 0:
        raise TorchcheckUsageError(f"assert_step_gradients: run never called {type(optimizer).__name__}.step(); "
                                   "pass the optimizer your loop steps")
    return result
