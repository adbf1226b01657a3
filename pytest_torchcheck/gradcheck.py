"""``assert_gradcheck``: torch.autograd.gradcheck that says which element is wrong.

Inputs (and a module's parameters) are promoted to float64, because finite
differences in float32 fail correct functions such as ``torch.sin``. The check
is never weaker than torch's default (slow mode, every Jacobian entry): it runs
that whenever it is affordable, and otherwise torch's fast mode plus several
independent signed random projections. On failure the analytic and numerical
Jacobians are compared here, element by element, to name the worst one. Whole
Jacobians are never printed.
"""

from __future__ import annotations

from typing import Any, Callable

from pytest_torchcheck.arguments import call_of, check_callable
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError


def _promote(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()):
        dtype = torch.complex128 if x.is_complex() else torch.float64
        return x.detach().to(dtype).clone().requires_grad_(True)
    return x


def _as_tuple(out: Any) -> tuple:
    __tracebackhide__ = True
    import torch

    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(o for o in out if isinstance(o, torch.Tensor))
    raise TorchcheckUsageError(f"assert_gradcheck: fn must return a tensor or a tuple of tensors, "
                               f"got {type(out).__name__}")


#: Above this many function evaluations (two forwards per checked input element,
#: one backward per output element) the full check gives way to random projections.
#: benchmarks/gradcheck_speed.py measures the line: about 0.5 s of slow-mode
#: gradcheck on a small MLP at 8,000 evaluations (60 us each).
FULL_CHECK_MAX_EVALUATIONS = 8000
#: Independent signed random projections when the Jacobian is too large for the full check.
PROJECTIONS = 16
#: The failure path names the worst entry by building both Jacobians; above this it reports the projection.
EXPLAIN_MAX_EVALUATIONS = 20 * FULL_CHECK_MAX_EVALUATIONS
MODES = ("auto", "full", "fast")


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
    mode: str = "auto",
    projections: int = PROJECTIONS,
) -> None:
    """Check ``fn``'s gradients against finite differences, in float64.

    ``fn`` is a function, an ``autograd.Function.apply``, or an ``nn.Module``
    (then its floating-point parameters are checked too, unless
    ``check_params=False``). ``gradgrad=True`` also runs ``gradgradcheck``;
    ``batched=True`` checks batched gradients (vmap) as well.

    ``mode="auto"`` runs torch's full (slow-mode) check whenever it costs at most
    ``FULL_CHECK_MAX_EVALUATIONS`` function evaluations, and otherwise torch's fast
    mode plus ``projections`` independent signed random projections. ``"full"``
    always runs the full check; ``"fast"`` only torch's fast mode (one fixed
    projection: an error whose sign varies across entries can cancel).
    """
    __tracebackhide__ = True
    import torch

    if mode not in MODES:
        raise TorchcheckUsageError(f"assert_gradcheck: mode={mode!r} is not one of {', '.join(map(repr, MODES))}")
    if not isinstance(projections, int) or isinstance(projections, bool) or projections < 1:
        raise TorchcheckUsageError(f"assert_gradcheck: projections={projections!r} must be an int of at least 1")
    if not inputs:
        raise TorchcheckUsageError("assert_gradcheck: pass at least one input tensor")
    # A module is called through forward(): its own signature is (*args, **kwargs).
    check_callable("assert_gradcheck", "fn.forward" if isinstance(fn, torch.nn.Module) else "fn",
                   fn.forward if isinstance(fn, torch.nn.Module) else fn, inputs,
                   call=call_of("fn", inputs, {}), expected="the inputs given after fn, one positional argument each, "
                   "returning a tensor or a tuple of tensors")
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

    with torch.no_grad():
        outputs = _as_tuple(target(*all_inputs))
    n_in = sum(all_inputs[i].numel() for i in diff_idx)
    n_out = sum(o.numel() for o in outputs if o.is_floating_point() or o.is_complex())
    evaluations = 2 * n_in + n_out
    full = mode == "full" or (mode == "auto" and evaluations <= FULL_CHECK_MAX_EVALUATIONS)

    kwargs = dict(eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol, check_batched_grad=batched)
    complex_ = any(all_inputs[i].is_complex() for i in diff_idx) or any(o.is_complex() for o in outputs)
    if complex_ and mode == "auto":
        full = True  # the projections here are real-valued: complex functions get torch's slow mode at any size
    explainable = evaluations <= EXPLAIN_MAX_EVALUATIONS and not complex_
    line = _mode_line(mode, full, projections, evaluations)
    if full and not complex_:
        # The full check is slow mode's: every entry of the analytic Jacobian against
        # central differences, within atol + rtol * |numerical|. Done here rather than
        # by torch's slow mode so that a failure names the worst entry at the cost of
        # one pass over the Jacobian.
        message = _explain(target, all_inputs, names, diff_idx, label, eps, atol, rtol)
        if message is not None:
            raise TorchcheckFailure(f"{message}\n  {line}", "assert_gradcheck")
    elif mode == "auto" and not full:
        reason = _projections(target, all_inputs, diff_idx, names, eps, atol, rtol, projections)
        if reason is not None:
            message = _explain(target, all_inputs, names, diff_idx, label, eps, atol, rtol) if explainable else None
            if message is not None:
                raise TorchcheckFailure(f"{message}\n  {line}", "assert_gradcheck")
            if not explainable:
                raise TorchcheckFailure(f"assert_gradcheck: gradients of {label} are wrong: {reason}\n"
                                        f"  checked in float64 with eps={eps:g}, atol={atol:g}, rtol={rtol:g}; {line}",
                                        "assert_gradcheck")
            # else every entry is within tolerance: the projection's miss was rounding.
    # torch's own check, for what does not depend on the Jacobian's size (undefined
    # and batched gradients, reentrancy) and its one projection; slow mode for
    # complex functions. (A fast-mode failure costs torch a slow-mode run for its
    # message, so it comes after the cheaper checks above.)
    torch_error = _torch_gradcheck(target, all_inputs, fast_mode=not (full and complex_), **kwargs)
    if torch_error is not None:
        message = None
        if explainable and not full:
            message = _explain(target, all_inputs, names, diff_idx, label, eps, atol, rtol)
        if message is None and explainable:
            # Every entry is within tolerance: torch's slow mode has the last word.
            torch_error = _torch_gradcheck(target, all_inputs, fast_mode=False, **kwargs)
        if message is not None:
            raise TorchcheckFailure(f"{message}\n  {line}", "assert_gradcheck")
        if torch_error is not None:
            raise TorchcheckFailure(f"assert_gradcheck: gradients of {label} are wrong: torch.autograd.gradcheck: "
                                    f"{torch_error}\n  checked in float64 with eps={eps:g}, atol={atol:g}, "
                                    f"rtol={rtol:g}; {line}", "assert_gradcheck")
    if gradgrad:
        # gradgradcheck differentiates the backward: its inputs are the inputs and the
        # output gradients, its outputs the input gradients.
        gg_full = mode == "full" or (mode == "auto" and 2 * (n_in + n_out) + n_in <= FULL_CHECK_MAX_EVALUATIONS)
        try:
            torch.autograd.gradgradcheck(target, all_inputs, eps=eps, atol=atol, rtol=rtol,
                                         nondet_tol=nondet_tol, fast_mode=not gg_full, check_batched_grad=batched)
        except Exception as e:  # GradcheckError carries whole Jacobians: keep its first line only
            raise TorchcheckFailure(
                f"assert_gradcheck: second-order gradients of {label} are wrong (gradgradcheck): {_first_line(e)}\n"
                f"  tolerance: atol={atol:g}, rtol={rtol:g}, eps={eps:g}; "
                f"{'full check' if gg_full else 'fast mode (one random projection)'}", "assert_gradcheck") from None


def _mode_line(mode: str, full: bool, projections: int, evaluations: int) -> str:
    if full:
        how = "full check (every Jacobian entry, as torch's slow mode)"
    elif mode == "fast":
        how = "fast mode only (mode='fast': one random projection)"
    else:
        how = (f"fast mode + {projections} random projections (the full check would take {evaluations} "
               f"evaluations > {FULL_CHECK_MAX_EVALUATIONS}; mode='full' forces it)")
    return f"mode: {how}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _torch_gradcheck(target: Callable[..., Any], inputs: tuple, **kwargs: Any) -> str | None:
    """torch.autograd.gradcheck; the first line of its error, or None when it passes."""
    import torch
    from torch.autograd.gradcheck import GradcheckError

    try:
        torch.autograd.gradcheck(target, inputs, raise_exception=True, **kwargs)
    except GradcheckError as e:
        return _first_line(e)
    return None


def _projections(fn, inputs, diff_idx, names, eps, atol, rtol, count) -> str | None:
    """``count`` independent random projections v^T J u, per (input, output) pair.

    torch's fast mode draws non-negative u, v from a generator with a fixed seed, so
    repeating it repeats the same projection, and an error whose sign varies across
    entries can cancel in it. Here they come from a generator seeded by
    ``torch.initial_seed()`` (the test's seed, so a rerun repeats them), alternately
    standard normal (a sign-varying error cancels only by chance, independently in
    each) and uniform in [0, 1) as torch's (a small error of one sign adds up
    across entries instead of averaging out). The tolerance
    is slow mode's entrywise ``atol + rtol * |numerical|`` carried through the
    projection, as torch does for fast mode (atol scaled by ``|u|_1 |v|_1``).
    Cost per projection: two forwards per checked input, one backward per output.
    """
    import torch

    gen = torch.Generator().manual_seed(torch.initial_seed())
    for p in range(count):
        draw = torch.randn if p % 2 == 0 else torch.rand
        us = {i: draw(inputs[i].shape, generator=gen, dtype=torch.float64) for i in diff_idx}
        numeric = {i: _directional(fn, inputs, i, us[i], eps) for i in diff_idx}
        fresh = tuple(t.detach().clone().requires_grad_(True) if i in us else t for i, t in enumerate(inputs))
        outs = _as_tuple(fn(*fresh))
        for k, o in enumerate(outs):
            if not o.requires_grad:
                continue
            v = draw(o.shape, generator=gen, dtype=torch.float64)
            grads = torch.autograd.grad((o.to(torch.float64) * v).sum(), [fresh[i] for i in diff_idx],
                                        retain_graph=True, allow_unused=True)
            for i, g in zip(diff_idx, grads):
                u = us[i]
                analytic = 0.0 if g is None else float((g.to(torch.float64) * u).sum())
                num = float((numeric[i][k] * v).sum())
                allowed = atol * float(u.abs().sum()) * float(v.abs().sum()) + rtol * abs(num)
                if abs(analytic - num) > allowed:
                    return (f"random projection {p + 1} of {count}: v^T J u for output {k} / {names[i]}: "
                            f"analytic {analytic:.6g}, numerical {num:.6g}, allowed difference {allowed:.3g}")
    return None


def _directional(fn, inputs, i, u, eps) -> tuple:
    """Central differences of every output along ``u`` in input ``i``."""
    import torch

    x = inputs[i].detach()
    step = eps * u.to(x.dtype)
    with torch.no_grad():
        plus = _as_tuple(fn(*(x + step if j == i else t for j, t in enumerate(inputs))))
        minus = _as_tuple(fn(*(x - step if j == i else t for j, t in enumerate(inputs))))
    return tuple(((p - m) / (2 * eps)).to(torch.float64) for p, m in zip(plus, minus))


def _explain(fn, inputs, names, diff_idx, label, eps, atol, rtol) -> str | None:
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
        columns: list[list] = [[] for _ in base]
        flat = x.data.view(-1)
        for j, orig in enumerate(flat.tolist()):
            flat[j] = orig + eps
            with torch.no_grad():
                plus = _as_tuple(fn(*inputs))
            flat[j] = orig - eps
            with torch.no_grad():
                minus = _as_tuple(fn(*inputs))
            flat[j] = orig
            for k, (p, m) in enumerate(zip(plus, minus)):
                if p.is_floating_point():
                    columns[k].append(((p - m) / (2 * eps)).reshape(-1))
        numeric = [torch.stack(c, 1).to(torch.float64) if c else torch.zeros(o.numel(), x.numel(), dtype=torch.float64)
                   for c, o in zip(columns, base)]
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
        return None  # every entry within tolerance: the failure is not in the Jacobian
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
