"""Training-sanity assertions: parameters update, the optimizer sees them all, the loss
starts where it should and can overfit one batch, samples stay independent, modules
are registered, runs are deterministic."""

from __future__ import annotations

import math
import random
import sys
from typing import TYPE_CHECKING, Any, Callable

from pytest_torchcheck.anomaly import iter_tensors
from pytest_torchcheck.arguments import check_callable
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError
from pytest_torchcheck.modes import STOCHASTIC_LAYERS

if TYPE_CHECKING:
    import torch


def _optimizer_param_ids(optimizer: Any) -> set[int]:
    return {id(p) for group in optimizer.param_groups for p in group["params"]}


def assert_optimizer_covers(model: "torch.nn.Module", optimizer: "torch.optim.Optimizer") -> None:
    """Every trainable parameter of ``model`` is in some parameter group of ``optimizer``."""
    __tracebackhide__ = True
    covered = _optimizer_param_ids(optimizer)
    missing = [(n, tuple(p.shape)) for n, p in model.named_parameters() if p.requires_grad and id(p) not in covered]
    if missing:
        lines = "\n".join(f"  {n} {s}" for n, s in missing)
        raise TorchcheckFailure(
            f"assert_optimizer_covers: {len(missing)} trainable parameter(s) of {type(model).__name__} are in no "
            f"parameter group of {type(optimizer).__name__}; they will never be trained:\n{lines}\n"
            "  likely cause: the optimizer was built from a subset (model.encoder.parameters()), before a layer "
            "was added or replaced, or from a model that was later re-created",
            "assert_optimizer_covers")


def assert_params_update(model: "torch.nn.Module", optimizer: "torch.optim.Optimizer",
                         step_fn: Callable[[], Any]) -> None:
    """Run one training step and check who moved.

    Fails naming every trainable parameter that did not change although it
    received a non-zero gradient (usually: missing from the optimizer), and every
    frozen parameter (``requires_grad=False``) that changed. Gradients are recorded
    as they accumulate, so a ``zero_grad()`` at the end of ``step_fn`` does not hide
    them; a parameter whose gradient is zero is not blamed for not moving (a
    weight-decay-only change is not "learning").
    """
    __tracebackhide__ = True
    import torch

    check_callable("assert_params_update", "step_fn", step_fn, call="step_fn()",
                   expected="one training step (forward, backward, optimizer.step()), with no arguments")
    named = list(model.named_parameters())
    before = {n: p.detach().clone() for n, p in named}
    got_grad: dict[str, bool] = {n: False for n, _ in named}
    handles = []
    for n, p in named:
        if p.requires_grad:
            def record(param: Any, name: str = n) -> None:
                if param.grad is not None and bool((param.grad != 0).any()):
                    got_grad[name] = True
            handles.append(p.register_post_accumulate_grad_hook(record))
    try:
        step_fn()
    finally:
        for h in handles:
            h.remove()
    covered = _optimizer_param_ids(optimizer)
    stuck, moved_frozen = [], []
    for n, p in named:
        changed = not torch.equal(before[n], p.detach())
        if p.requires_grad and got_grad[n] and not changed:
            why = "not in any optimizer parameter group" if id(p) not in covered else \
                "in the optimizer, but the step did not move it (lr 0? gradients cleared before step()?)"
            stuck.append(f"  {n} {tuple(p.shape)}: non-zero gradient, unchanged; {why}")
        if not p.requires_grad and changed:
            moved_frozen.append(f"  {n} {tuple(p.shape)}: requires_grad=False but changed (in-place update, "
                                "weight decay on a frozen parameter, or a shared tensor)")
    if stuck or moved_frozen:
        parts = []
        if stuck:
            parts.append(f"{len(stuck)} trainable parameter(s) did not update:\n" + "\n".join(stuck))
        if moved_frozen:
            parts.append(f"{len(moved_frozen)} frozen parameter(s) changed:\n" + "\n".join(moved_frozen))
        raise TorchcheckFailure("assert_params_update: " + "\n".join(parts), "assert_params_update")


def assert_loss_at_init(loss: "torch.Tensor | float", num_classes: int, tol: float = 0.2) -> None:
    """Cross-entropy at initialisation is close to ``ln(num_classes)`` (uniform predictions).

    ``tol`` is the allowed relative deviation (default 20%).
    """
    __tracebackhide__ = True
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise TorchcheckUsageError(f"assert_loss_at_init: num_classes must be an int >= 2, got {num_classes!r}")
    if not (isinstance(tol, (int, float)) and tol > 0):
        raise TorchcheckUsageError(f"assert_loss_at_init: tol must be a positive number, got {tol!r}")
    value = float(loss.detach().item()) if hasattr(loss, "detach") else float(loss)
    expected = math.log(num_classes)
    if not math.isfinite(value) or abs(value - expected) > tol * expected:
        hint = ("the logits start too large: scale down the last layer's initial weights, or check that "
                "softmax is not applied twice" if value > expected else
                "the loss is lower than chance: labels may leak into the inputs, or the loss is averaged wrongly")
        raise TorchcheckFailure(
            f"assert_loss_at_init: loss at initialisation is {value:.4f}, expected ln({num_classes}) = "
            f"{expected:.4f} within {100 * tol:.0f}% ([{expected * (1 - tol):.4f}, {expected * (1 + tol):.4f}])\n"
            f"  likely cause: {hint}", "assert_loss_at_init")


def assert_overfits(
    model: "torch.nn.Module",
    batch: Any,
    loss_fn: Callable[..., Any] | None = None,
    optimizer: "torch.optim.Optimizer | None" = None,
    steps: int = 100,
    threshold: float | None = None,
    train_step: Callable[[Any], Any] | None = None,
) -> list[float]:
    """The loss on one fixed batch falls below ``threshold`` within ``steps`` steps.

    ``batch`` is ``(inputs, targets)``; the default step is ``zero_grad``,
    ``loss_fn(model(inputs), targets)``, ``backward``, ``step`` with ``optimizer``
    (default: Adam, lr 1e-2). Pass ``train_step(batch) -> loss`` to test your own
    training step instead. ``threshold`` defaults to 5% of the first loss. Returns
    the loss curve.
    """
    __tracebackhide__ = True
    import torch

    if not isinstance(steps, int) or steps < 1:
        raise TorchcheckUsageError(f"assert_overfits: steps must be a positive int, got {steps!r}")
    if train_step is not None:
        check_callable("assert_overfits", "train_step", train_step, (batch,), call="train_step(batch)",
                       expected="one training step on the batch, returning its loss")
    else:
        if loss_fn is None:
            raise TorchcheckUsageError("assert_overfits: pass loss_fn (for the default step) or train_step=")
        check_callable("assert_overfits", "loss_fn", loss_fn, (None, None), call="loss_fn(outputs, targets)",
                       expected="the scalar loss of model(inputs) against the targets")
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise TorchcheckUsageError("assert_overfits: batch must be (inputs, targets), or pass train_step=")
        opt = optimizer or torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
        inputs, targets = batch

        def train_step(_batch: Any) -> Any:
            opt.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            opt.step()
            return loss

    model.train()
    curve: list[float] = []
    last_output: list[Any] = []
    # The model's last output, to recognise probabilities fed to a loss that expects logits.
    handle = model.register_forward_hook(lambda m, args, out: last_output.__setitem__(slice(None), [out]))
    try:
        for _ in range(steps):
            loss = train_step(batch)
            value = float(loss.detach().item()) if hasattr(loss, "detach") else float(loss)
            curve.append(value)
            limit = threshold if threshold is not None else 0.05 * curve[0]
            if value < limit:
                return curve
    finally:
        handle.remove()
    limit = threshold if threshold is not None else 0.05 * curve[0]
    cause = ("gradients never reach the parameters (zero_grad between backward and step, detached loss, "
             "parameters missing from the optimizer), a learning rate far off, or a loss/label mismatch")
    softmaxed = _probability_rows(last_output[0]) if last_output else None
    if softmaxed is not None:
        classes, floor = softmaxed
        if min(curve) >= 0.9 * floor:
            cause = (f"the model outputs probabilities (every row is >= 0 and sums to 1 over {classes} classes), "
                     "and the loss applies log_softmax to them again (F.cross_entropy / nn.CrossEntropyLoss "
                     f"expect logits): the loss cannot fall below ln(1 + {classes - 1}/e) = {floor:.4g}, where this "
                     "curve flattens; return the logits (drop the final softmax) and apply softmax only for "
                     "predictions. Otherwise: " + cause)
    raise TorchcheckFailure(
        f"assert_overfits: loss on one fixed batch did not fall below {limit:.4g} in {steps} steps "
        f"(first {curve[0]:.4g}, best {min(curve):.4g}, last {curve[-1]:.4g})\n"
        f"  curve: {_curve_text(curve)}\n"
        f"  likely cause: {cause}",
        "assert_overfits")


def _probability_rows(output: Any) -> tuple[int, float] | None:
    """(classes, the lowest cross-entropy reachable from them) when ``output`` is softmax probabilities."""
    import torch

    if not isinstance(output, torch.Tensor) or not output.is_floating_point() or output.dim() < 2:
        return None
    out = output.detach().double()
    for dim in (1, -1):
        classes = out.shape[dim]
        if classes < 2 or out.min() < 0 or out.max() > 1:
            continue
        if torch.allclose(out.sum(dim), torch.ones((), dtype=out.dtype), atol=1e-4):
            return classes, math.log(1 + (classes - 1) / math.e)
    return None


def _curve_text(curve: list[float], points: int = 10) -> str:
    bars = "▁▂▃▄▅▆▇█"
    width = 50  # one bar per step, or per bucket of steps on long curves
    buckets = [curve[i * len(curve) // width:(i + 1) * len(curve) // width] for i in range(width)] \
        if len(curve) > width else [[v] for v in curve]
    means = [sum(b) / len(b) for b in buckets if b]
    lo, hi = min(means), max(means)
    spark = "".join(bars[round((v - lo) / (hi - lo) * (len(bars) - 1)) if hi > lo else 0] for v in means)
    idx = sorted({round(i * (len(curve) - 1) / (points - 1)) for i in range(points)}) if len(curve) > 1 else [0]
    samples = ", ".join(f"{i}: {curve[i]:.4g}" for i in idx)
    return f"{spark}\n  steps {samples}"


def assert_batch_independent(model: Callable[..., Any], inputs: "torch.Tensor", *,
                             allow_batchnorm: bool = False, atol: float = 0.0) -> None:
    """The output for sample i does not depend on the input of sample j != i.

    Catches reshape/view/transpose bugs that mix samples across the batch
    dimension (dim 0). Batch norm in training mode mixes samples by design: pass
    ``model.eval()`` or ``allow_batchnorm=True``.
    """
    __tracebackhide__ = True
    import torch

    if not isinstance(inputs, torch.Tensor) or inputs.dim() < 1 or inputs.shape[0] < 2:
        raise TorchcheckUsageError("assert_batch_independent: inputs must be a tensor with a batch dimension "
                                   "(dim 0) of at least 2 samples")
    if isinstance(model, torch.nn.Module) and not allow_batchnorm:
        bn = [n for n, m in model.named_modules()
              if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training]
        if bn:
            raise TorchcheckUsageError(
                f"assert_batch_independent: batch norm in training mode mixes samples by design ({', '.join(bn)}); "
                "pass model.eval() or allow_batchnorm=True")
    x = inputs.detach().clone()
    if not x.is_floating_point():
        raise TorchcheckUsageError("assert_batch_independent: inputs must be floating point (gradients flow "
                                   "through them); for token ids, pass the embedded inputs to the rest of the model")
    x.requires_grad_(True)
    outs = [t for _, t in iter_tensors(model(x)) if t.is_floating_point() and t.requires_grad]
    if not outs:
        raise TorchcheckUsageError("assert_batch_independent: the model's output does not depend on its inputs")
    batch = x.shape[0]
    for k, out in enumerate(outs):
        if out.dim() == 0 or out.shape[0] != batch:
            continue
        for i in range(batch):
            (g,) = torch.autograd.grad(out[i].sum(), x, retain_graph=True, allow_unused=True)
            if g is None:
                continue
            g = g.detach().abs().reshape(batch, -1).amax(dim=1)
            g[i] = 0
            j = int(g.argmax())
            if g[j] > atol:
                raise TorchcheckFailure(
                    f"assert_batch_independent: output {k} of sample {i} depends on the input of sample {j} "
                    f"(max |d out[{i}] / d in[{j}]| = {g[j].item():.3g}); samples are mixed across the batch "
                    f"dimension\n  likely cause: a view/reshape/transpose that moves the batch dimension "
                    f"(x.view(-1, batch) instead of x.view(batch, -1)), a reduction over dim 0, or batch statistics",
                    "assert_batch_independent")


def assert_modules_registered(model: "torch.nn.Module", *, tensors: bool = False) -> None:
    """No modules, parameters or grad-requiring tensors hide where PyTorch cannot see them.

    Flags plain ``list``/``dict``/``tuple``/``set`` attributes holding modules,
    parameters or tensors that require grad (use ``nn.ModuleList``/``ModuleDict``/
    ``ParameterList``), and tensor attributes that require grad but are not
    parameters. ``tensors=True`` also flags every plain tensor attribute (not a
    buffer: it is not moved by ``.to()`` nor saved in ``state_dict``).

    Every attribute of your own module classes is checked, underscore-prefixed ones
    too (``self._layers = [...]``). Skipped, and why: the bookkeeping that
    ``nn.Module.__init__`` itself creates (``_parameters``, ``_modules``, hooks...),
    underscore attributes of torch's own classes (``nn.RNN._flat_weights`` is a
    plain list of parameters that are registered), and modules or parameters that
    are registered elsewhere in ``model`` (a convenience list of aliases such as
    ``self._blocks = [self.a, self.b]`` hides nothing).
    """
    __tracebackhide__ = True
    import torch

    base = set(vars(torch.nn.Module()))
    registered = {id(m) for m in model.modules()} | {id(p) for p in model.parameters()}
    problems = []
    for mname, module in model.named_modules():
        prefix = f"{mname}." if mname else ""
        torch_class = type(module).__module__.split(".")[0] == "torch"
        for attr, value in vars(module).items():
            if attr in base or (torch_class and attr.startswith("_")):
                continue
            where = f"{type(model).__name__}.{prefix}{attr}"
            if isinstance(value, (list, tuple, dict, set)):
                found = _hidden(value, registered)
                if found:
                    kinds = ", ".join(f"{n} {k}" for k, n in sorted(found.items()))
                    fix = "nn.ModuleDict" if isinstance(value, dict) else "nn.ModuleList"
                    if "Parameter(s)" in found and "Module(s)" not in found:
                        fix = "nn.ParameterDict" if isinstance(value, dict) else "nn.ParameterList"
                    problems.append(f"  {where}: plain {type(value).__name__} holding {kinds}; use {fix} "
                                    "(otherwise never trained, never moved by .to(), missing from state_dict)")
            elif isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                if value.requires_grad:
                    problems.append(f"  {where}: tensor attribute {tuple(value.shape)} requires grad but is not a "
                                    "registered parameter; wrap it in nn.Parameter")
                elif tensors and value.is_floating_point():
                    problems.append(f"  {where}: plain tensor attribute {tuple(value.shape)}; use register_buffer "
                                    "(persistent=False if it should not be saved)")
    if problems:
        raise TorchcheckFailure(
            f"assert_modules_registered: {len(problems)} unregistered member(s) in {type(model).__name__}:\n"
            + "\n".join(problems), "assert_modules_registered")


def _hidden(value: Any, registered: set[int], depth: int = 0) -> dict[str, int]:
    import torch

    found: dict[str, int] = {}
    items = value.values() if isinstance(value, dict) else value
    for item in items:
        if isinstance(item, torch.nn.Module):
            if id(item) not in registered:
                found["Module(s)"] = found.get("Module(s)", 0) + 1
        elif isinstance(item, torch.nn.Parameter):
            if id(item) not in registered:
                found["Parameter(s)"] = found.get("Parameter(s)", 0) + 1
        elif isinstance(item, torch.Tensor) and item.requires_grad:
            found["grad-requiring tensor(s)"] = found.get("grad-requiring tensor(s)", 0) + 1
        elif isinstance(item, (list, tuple, dict)) and depth < 3:
            for k, n in _hidden(item, registered, depth + 1).items():
                found[k] = found.get(k, 0) + n
    return found


class _Watch:
    """Global module hooks while ``fn`` runs once: every call's (module, training), and the tensors given to
    outermost calls with their version counters (an in-place op on an input bumps its version)."""

    def __init__(self) -> None:
        from torch.nn.modules import module as module_mod

        self.seen: list[tuple[Any, bool]] = []
        self.inputs: list[tuple[Any, str, Any, int]] = []
        self._depth = 0
        self._handles = [module_mod.register_module_forward_pre_hook(self._pre),
                         module_mod.register_module_forward_hook(self._post)]

    def _pre(self, module: Any, args: Any) -> None:
        self.seen.append((module, module.training))
        if self._depth == 0:
            self.inputs.extend((module, f"input{path}", t, t._version) for path, t in iter_tensors(args))
        self._depth += 1

    def _post(self, module: Any, args: Any, output: Any) -> None:
        self._depth -= 1

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()

    def mutated(self) -> list[tuple[Any, str, int, int]]:
        return [(m, where, before, t._version) for m, where, t, before in self.inputs if t._version != before]


def assert_deterministic(fn: Callable[[], Any], runs: int = 2, *, seed: int | None = 0,
                         vary_seed: bool | None = None, model: "torch.nn.Module | None" = None,
                         atol: float = 0.0, rtol: float = 0.0) -> None:
    """``runs`` calls of ``fn`` give identical outputs (within ``atol``/``rtol``).

    Before each run, ``random``, torch and NumPy are seeded (pass ``seed=None`` to
    check ``fn`` exactly as it is). By default (``vary_seed=None``) every run gets
    ``seed`` when ``fn`` trains, and run k gets ``seed + k - 1`` when ``fn`` is an
    evaluation: when every module it called, other than dropout-like layers, was in
    eval mode. An evaluation's output must not depend on the random seed, so a
    dropout layer left in training mode, or ``F.dropout`` that ignores the mode, fails
    instead of replaying the same mask. ``vary_seed=True``/``False`` forces either.
    With ``model``, the gradients of its parameters (of the sum of the outputs) are
    compared too. Reports the first differing tensor.
    """
    __tracebackhide__ = True
    import torch

    if not isinstance(runs, int) or runs < 2:
        raise TorchcheckUsageError(f"assert_deterministic: runs must be an int >= 2, got {runs!r}")
    if vary_seed is not None and not isinstance(vary_seed, bool):
        raise TorchcheckUsageError(f"assert_deterministic: vary_seed must be True, False or None, got {vary_seed!r}")
    check_callable("assert_deterministic", "fn", fn, call="fn()",
                   expected="the computation to repeat, with no arguments, returning its tensors")
    results = []
    seeds: list[int | None] = []
    evaluation = False
    stochastic_on: list[str] = []
    mutated: list[tuple[Any, str, int, int]] = []
    seen: list[tuple[Any, bool]] = []
    for run in range(runs):
        run_seed = seed
        if seed is not None and run > 0 and (vary_seed or (vary_seed is None and evaluation)):
            run_seed = seed + run
        seeds.append(run_seed)
        if run_seed is not None:
            random.seed(run_seed)
            torch.manual_seed(run_seed)
            np = sys.modules.get("numpy")
            if np is not None:
                np.random.seed(run_seed)
        watch = _Watch() if run == 0 else None
        try:
            out = fn()
        finally:
            if watch is not None:
                watch.remove()
        if watch is not None:
            mutated = watch.mutated()
            seen = watch.seen
        if run == 0 and seen:
            others = [training for m, training in seen if type(m).__name__ not in STOCHASTIC_LAYERS]
            evaluation = not any(others)
            names = _module_names(model, [m for m, _ in seen])
            stochastic_on = sorted({names(m) for m, training in seen
                                    if training and type(m).__name__ in STOCHASTIC_LAYERS})
        tensors = [(f"output{p}", t) for p, t in iter_tensors(out)]
        if not tensors:
            raise TorchcheckUsageError(f"assert_deterministic: fn returned no tensor ({type(out).__name__})")
        if model is not None:
            params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
            total = sum(t.sum() for _, t in tensors if t.requires_grad and t.is_floating_point())
            if isinstance(total, torch.Tensor) and total.requires_grad:
                grads = torch.autograd.grad(total, [p for _, p in params], allow_unused=True)
                tensors += [(f"gradient of {n}", g) for (n, _), g in zip(params, grads) if g is not None]
        results.append([(name, t.detach().clone()) for name, t in tensors])
    first = results[0]
    for r, other in enumerate(results[1:], start=2):
        for (name, a), (_, b) in zip(first, other):
            if a.shape != b.shape:
                raise TorchcheckFailure(f"assert_deterministic: run 1 and run {r} differ in {name}: shapes "
                                        f"{tuple(a.shape)} vs {tuple(b.shape)}", "assert_deterministic")
            same = torch.equal(a, b) if atol == 0 and rtol == 0 else \
                torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol, equal_nan=True)
            if not same:
                diff = (a.double() - b.double()).abs()
                pos = int(diff.flatten().argmax()) if diff.numel() else 0
                idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(pos), a.shape)) if a.dim() else ()
                n_diff = int((diff > atol + rtol * b.double().abs()).sum())
                if mutated:
                    m, where, before, after = mutated[0]
                    how = (f"seeded with {seeds[0]}" + (f" and {seeds[r - 1]}" if seeds[0] != seeds[r - 1] else "")
                           + f"; {type(m).__name__} modified its {where} in place during run 1 (version "
                           f"{before} -> {after})")
                    cause = ("an in-place op on the input (x.sub_(...), x[...] = ..., x.clamp_()) changes the data "
                             "the next call sees; when the input is a view of your dataset, the dataset itself "
                             "drifts at every epoch. Compute a new tensor (x = x - mean) instead")
                elif seeds[0] != seeds[r - 1]:
                    how = (f"run 1 seeded with {seeds[0]}, run {r} with {seeds[r - 1]} (fn is an evaluation: "
                           "every module ran in eval mode, so its output must not depend on the seed)")
                    if stochastic_on:
                        cause = (f"{', '.join(stochastic_on)} ran in training mode while the rest of the model was "
                                 "in eval mode: a dropout layer left on in evaluation (set back to train() after "
                                 "model.eval(), or a train() override that does not propagate)")
                    else:
                        cause = ("randomness that ignores the module mode: F.dropout(x, p) without "
                                 "training=self.training, torch.rand/bernoulli in forward, or sampling in the "
                                 "evaluation itself")
                else:
                    how = f"seeded each run with {seed!r}"
                    cause = ("randomness that the global seed does not control (a torch.Generator or NumPy "
                             "Generator seeded from time/entropy, dropout with its own generator), "
                             "non-deterministic kernels (torch.use_deterministic_algorithms(True) tells), or "
                             "state carried over between runs")
                raise TorchcheckFailure(
                    f"assert_deterministic: run 1 and run {r} differ in {name} {tuple(a.shape)}: {n_diff} of "
                    f"{a.numel()} elements; largest difference {diff.flatten()[pos].item():.4g} at index {idx} "
                    f"({a.flatten()[pos].item():.6g} vs {b.flatten()[pos].item():.6g})\n"
                    f"  {how}; likely cause: {cause}", "assert_deterministic")


def _module_names(model: Any, modules: list[Any]) -> Callable[[Any], str]:
    """Qualified names relative to ``model`` (or to the first module called), class name as a fallback."""
    roots = [model] if model is not None else modules[:1]
    names: dict[int, str] = {}
    for root in roots:
        top = type(root).__name__
        for qual, m in root.named_modules():
            names.setdefault(id(m), f"{top}.{qual}" if qual else top)
    return lambda m: f"'{names.get(id(m), type(m).__name__)}' ({type(m).__name__})"
