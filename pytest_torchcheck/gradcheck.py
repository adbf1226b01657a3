"""``assert_gradcheck``: torch.autograd.gradcheck that says which element is wrong.

Inputs (and a module's parameters) are promoted to float64, because finite
differences in float32 fail correct functions such as ``torch.sin``. The fast
mode (one random projection of the Jacobian) runs first; only when it fails does
the full check run, and then the analytic and numerical Jacobians are compared
here, element by element, to name the worst one. Whole Jacobians are never
printed.
"""

from __future__ import annotations

from typing import Any, Callable

from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError


def _promote(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()):
        dtype = torch.complex128 if x.is_complex() else torch.float64
        return x.detach().to(dtype).clone().requires_grad_(True)
    return x


def _as_tuple(out: Any) -> tuple:
    import torch

    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(o for o in out if isinstance(o, torch.Tensor))
    raise TorchcheckUsageError(f"assert_gradcheck: fn must return a tensor or a tuple of tensors, "
                               f"got {type(out).__name__}")


def assert_gradcheck(
    fn: Callable[..., Any],
    *inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gradgrad: bool = False,
    batched: bool = False,
    check_params: bool = True,
    nondet_tol: float = 0.0,
) -> None:
    """Check ``fn``'s gradients against finite differences, in float64.

    ``fn`` is a function, an ``autograd.Function.apply``, or an ``nn.Module``
    (then its floating-point parameters are checked too, unless
    ``check_params=False``). ``gradgrad=True`` also runs ``gradgradcheck``;
    ``batched=True`` checks batched gradients (vmap) as well.
    """
    __tracebackhide__ = True
    import torch

    if not inputs:
        raise TorchcheckUsageError("assert_gradcheck: pass at least one input tensor")
    promoted = tuple(_promote(x) for x in inputs)
    names = [f"input {i}" for i in range(len(promoted))]
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):  # MyFunction.apply
        label = f"{owner.__name__}.{getattr(fn, '__name__', 'apply')}"
    else:
        label = getattr(fn, "__qualname__", None) or type(fn).__name__

    if isinstance(fn, torch.nn.Module):
        module = fn
        label = type(module).__name__
        params = {n: _promote(p) for n, p in module.named_parameters()
                  if check_params and (p.is_floating_point() or p.is_complex())}
        fixed = {n: (p.detach().to(torch.float64) if p.is_floating_point() else p.detach())
                 for n, p in module.named_parameters() if n not in params}
        buffers = {n: (b.to(torch.float64) if b.is_floating_point() else b) for n, b in module.named_buffers()}
        param_names = list(params)
        n_inputs = len(promoted)

        def call(*args: Any) -> Any:
            state = {**fixed, **buffers, **dict(zip(param_names, args[n_inputs:]))}
            return torch.func.functional_call(module, state, args[:n_inputs])

        all_inputs = promoted + tuple(params.values())
        names += [f"parameter '{n}'" for n in param_names]
        target: Callable[..., Any] = call
    else:
        all_inputs = promoted
        target = fn

    diff_idx = [i for i, x in enumerate(all_inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
    if not diff_idx:
        raise TorchcheckUsageError("assert_gradcheck: no floating-point input or parameter to check")

    kwargs = dict(eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol, raise_exception=False,
                  check_batched_grad=batched)
    if not torch.autograd.gradcheck(target, all_inputs, fast_mode=True, **kwargs):
        # The full check, only on failure. Without batched gradients it is our own
        # entry-by-entry comparison of the analytic and numerical Jacobians (the
        # same central differences as torch's slow mode), which also finds the
        # worst entry for the message; batched gradients need torch's slow mode.
        if batched and torch.autograd.gradcheck(target, all_inputs, fast_mode=False, **kwargs):
            pass
        else:
            message = _explain(target, all_inputs, names, diff_idx, label, eps, atol, rtol, batched)
            if message is not None:
                raise TorchcheckFailure(message, "assert_gradcheck")
    if gradgrad:
        try:
            torch.autograd.gradgradcheck(target, all_inputs, eps=eps, atol=atol, rtol=rtol,
                                         nondet_tol=nondet_tol, fast_mode=True, check_batched_grad=batched)
        except Exception as e:  # GradcheckError carries whole Jacobians: keep its first line only
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise TorchcheckFailure(
                f"assert_gradcheck: second-order gradients of {label} are wrong (gradgradcheck): {first}\n"
                f"  tolerance: atol={atol:g}, rtol={rtol:g}, eps={eps:g}", "assert_gradcheck") from None


def _explain(fn, inputs, names, diff_idx, label, eps, atol, rtol, batched) -> str | None:
    """Find the worst Jacobian entry by comparing analytic and central-difference Jacobians."""
    import torch

    with torch.no_grad():
        base = _as_tuple(fn(*inputs))
    outputs_numel = [o.numel() for o in base]
    worst = None  # (excess, out_idx, out_flat, in_idx, in_flat, analytic, numeric)
    bad_entries = 0
    total_entries = 0
    for in_i in diff_idx:
        x = inputs[in_i]
        numeric = [torch.zeros(o.numel(), x.numel(), dtype=torch.float64) for o in base]
        flat = x.data.view(-1)
        for j in range(x.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            with torch.no_grad():
                plus = _as_tuple(fn(*inputs))
            flat[j] = orig - eps
            with torch.no_grad():
                minus = _as_tuple(fn(*inputs))
            flat[j] = orig
            for k, (p, m) in enumerate(zip(plus, minus)):
                if p.is_floating_point():
                    numeric[k][:, j] = ((p - m) / (2 * eps)).reshape(-1).to(torch.float64)
        for k, out in enumerate(base):
            if not out.is_floating_point():
                continue
            analytic = torch.zeros(out.numel(), x.numel(), dtype=torch.float64)
            fresh = tuple(t.detach().clone().requires_grad_(True) if isinstance(t, torch.Tensor) and t.requires_grad
                          else t for t in inputs)
            out_k = _as_tuple(fn(*fresh))[k]
            for r in range(out.numel()):
                if not out_k.requires_grad:
                    break
                g = torch.autograd.grad(out_k.reshape(-1)[r], fresh[in_i], retain_graph=True, allow_unused=True)[0]
                if g is not None:
                    analytic[r] = g.reshape(-1).to(torch.float64)
            err = (analytic - numeric[k]).abs()
            allowed = atol + rtol * numeric[k].abs()
            excess = err - allowed
            total_entries += excess.numel()
            bad_entries += int((excess > 0).sum())
            if excess.numel():
                pos = int(excess.argmax())
                value = excess.view(-1)[pos].item()
                r, c = divmod(pos, x.numel())
                if worst is None or value > worst[0]:
                    worst = (value, k, r, in_i, c, analytic[r, c].item(), numeric[k][r, c].item())
    if worst is None or worst[0] <= 0:
        if not batched:
            return None  # every entry within tolerance: fast mode's projection was noise
        return (f"assert_gradcheck: gradients of {label} are wrong: batched gradients (vmap) disagree with "
                "per-sample ones, though every Jacobian entry is within tolerance")
    _, k, r, in_i, c, a, n = worst
    out_shape = tuple(base[k].shape)
    in_shape = tuple(inputs[in_i].shape)
    out_index = _unravel(r, out_shape)
    in_index = _unravel(c, in_shape)
    abs_err = abs(a - n)
    rel_err = abs_err / abs(n) if n != 0 else float("inf")
    ratio = f" (analytic/numerical = {a / n:.4g})" if n != 0 else ""
    return (
        f"assert_gradcheck: gradients of {label} are wrong\n"
        f"  worst entry: d output {k}{list(out_index)} / d {names[in_i]}{list(in_index)}\n"
        f"    analytic  = {a:.8g}\n"
        f"    numerical = {n:.8g}{ratio}\n"
        f"    abs error = {abs_err:.3g}, rel error = {rel_err:.3g}; allowed = atol {atol:g} + rtol {rtol:g} * "
        f"|numerical| = {atol + rtol * abs(n):.3g}\n"
        f"  {bad_entries} of {total_entries} Jacobian entries (over all checked inputs and parameters) are out of "
        f"tolerance; output shapes {[tuple(o.shape) for o in base]}, {names[in_i]} shape {in_shape}\n"
        f"  checked in float64 with eps={eps:g}; outputs have {sum(outputs_numel)} elements"
    )


def _unravel(flat: int, shape: tuple) -> tuple:
    index = []
    for dim in reversed(shape):
        flat, rem = divmod(flat, dim) if dim else (flat, 0)
        index.append(rem)
    return tuple(reversed(index))
