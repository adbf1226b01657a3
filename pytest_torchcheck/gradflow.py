"""``assert_grad_flow``: every trainable parameter gets a useful gradient from the loss."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from pytest_torchcheck.arguments import check_callable
from pytest_torchcheck.errors import TorchcheckFailure, TorchcheckUsageError

if TYPE_CHECKING:
    import torch


@dataclass
class ParamGrad:
    name: str
    shape: tuple
    norm: float | None  # None: not connected to the loss
    zero_fraction: float | None
    problems: list[str]


@dataclass
class GradFlowReport:
    rows: list[ParamGrad]
    frozen: list[str]
    ignored: list[str]
    first_last_ratio: float | None

    def table(self) -> str:
        width = max([len(r.name) for r in self.rows] + [9])
        lines = [f"  {'#':>3}  {'parameter':<{width}}  {'shape':<16} {'grad norm':>11} {'zeros':>6}  problem"]
        for i, r in enumerate(self.rows):
            norm = "None" if r.norm is None else f"{r.norm:.3e}"
            zeros = "" if r.zero_fraction is None else f"{100 * r.zero_fraction:.0f}%"
            lines.append(f"  {i:>3}  {r.name:<{width}}  {str(r.shape):<16} {norm:>11} {zeros:>6}  "
                         f"{'; '.join(r.problems) or 'ok'}")
        return "\n".join(lines)


def assert_grad_flow(
    model: "torch.nn.Module",
    loss: "torch.Tensor | Callable[[], torch.Tensor]",
    *,
    ignore: Sequence[str] = (),
    vanishing_ratio: float = 1e-3,
    vanishing_first_norm: float = 1e-4,
    exploding_ratio: float = 70.0,
    dead_fraction: float = 0.7,
    plot: str | None = None,
) -> GradFlowReport:
    """After one backward of ``loss`` (a tensor, or a closure returning it), check every
    trainable parameter: connected, non-zero, finite, not vanishing/exploding, not mostly dead.

    Defaults follow AutoTrainer (ICSE 2021): vanishing when the first/last layer
    gradient-norm ratio is below 1e-3 and the first layer's norm below 1e-4;
    exploding when the ratio is above 70; dead units when 70% or more of a
    layer's gradient entries are zero (embeddings excepted: their gradients are
    sparse by design). ``ignore`` takes glob patterns of parameter names meant to
    be unused. ``.grad`` is not touched: gradients come from ``torch.autograd.grad``.
    """
    __tracebackhide__ = True
    import torch

    if callable(loss) and not isinstance(loss, torch.Tensor):
        check_callable("assert_grad_flow", "loss", loss, call="loss()",
                       expected="a closure with no arguments returning the scalar loss (or pass the loss tensor)")
        loss = loss()
    if not isinstance(loss, torch.Tensor):
        raise TorchcheckUsageError(f"assert_grad_flow: loss must be a tensor or a closure returning one, "
                                   f"got {type(loss).__name__}")
    if loss.numel() != 1:
        raise TorchcheckUsageError(f"assert_grad_flow: loss must be a scalar, got shape {tuple(loss.shape)}")
    if not loss.requires_grad:
        raise TorchcheckFailure("assert_grad_flow: the loss does not require grad: no parameter is connected "
                                "to it (computed under torch.no_grad(), or from detached tensors)",
                                "assert_grad_flow")
    embedding_params = {f"{mname}.{pname}" if mname else pname
                        for mname, m in model.named_modules() if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))
                        for pname, _ in m.named_parameters(recurse=False)}
    trainable, frozen, ignored = [], [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            frozen.append(name)
        elif any(fnmatch.fnmatchcase(name, pat) for pat in ignore):
            ignored.append(name)
        else:
            trainable.append((name, p))
    if not trainable:
        raise TorchcheckUsageError("assert_grad_flow: the model has no trainable parameters to check")
    grads = torch.autograd.grad(loss, [p for _, p in trainable], allow_unused=True, retain_graph=False)
    rows: list[ParamGrad] = []
    for (name, p), g in zip(trainable, grads):
        problems: list[str] = []
        if g is None:
            rows.append(ParamGrad(name, tuple(p.shape), None, None, ["not connected to the loss (gradient is None)"]))
            continue
        g = g.detach()
        finite = bool(torch.isfinite(g).all())
        norm = float(g.double().norm()) if finite else float("nan")
        zero_fraction = float((g == 0).double().mean()) if g.numel() else 0.0
        if not finite:
            problems.append(f"non-finite gradient ({int(torch.isnan(g).sum())} NaN, {int(torch.isinf(g).sum())} Inf)")
        elif norm == 0.0:
            problems.append("all-zero gradient")
        elif zero_fraction >= dead_fraction and name not in embedding_params and g.numel() > 1:
            problems.append(f"dead units: {100 * zero_fraction:.0f}% zero entries (>= {100 * dead_fraction:.0f}%)")
        rows.append(ParamGrad(name, tuple(p.shape), norm, zero_fraction, problems))

    # First/last *layer*: weight-like parameters (2+ dims), in definition order.
    layers = [r for r in rows if len(r.shape) >= 2 and r.norm is not None and math.isfinite(r.norm)] or \
        [r for r in rows if r.norm is not None and math.isfinite(r.norm)]
    ratio = None
    if len(layers) >= 2 and layers[-1].norm:
        first, last = layers[0], layers[-1]
        ratio = first.norm / last.norm
        if ratio < vanishing_ratio and first.norm < vanishing_first_norm:
            first.problems.append(f"vanishing: first/last layer norm ratio {ratio:.2e} < {vanishing_ratio:g} "
                                  f"and first-layer norm {first.norm:.2e} < {vanishing_first_norm:g}")
        elif ratio > exploding_ratio:
            first.problems.append(f"exploding: first/last layer norm ratio {ratio:.3g} > {exploding_ratio:g}")
    report = GradFlowReport(rows, frozen, ignored, ratio)
    if plot is not None:
        _plot(report, plot)
    bad = [r for r in rows if r.problems]
    if bad:
        extra = []
        if frozen:
            extra.append(f"  frozen (requires_grad=False, not checked): {', '.join(frozen)}")
        if ignored:
            extra.append(f"  ignored by pattern: {', '.join(ignored)}")
        raise TorchcheckFailure(
            f"assert_grad_flow: {len(bad)} of {len(rows)} trainable parameters have a gradient problem "
            f"({', '.join(r.name for r in bad)})\n{report.table()}\n" + "\n".join(extra) +
            ("\n" if extra else "") +
            "  likely causes: a branch cut by .detach()/.item()/torch.no_grad(), a module not used in forward, "
            "saturated or dead activations; pass ignore=[...] for parameters meant to be unused",
            "assert_grad_flow")
    return report


def _plot(report: GradFlowReport, path: str) -> None:
    import warnings

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn("assert_grad_flow(plot=...): matplotlib is not installed; no chart written", stacklevel=3)
        return
    names = [r.name for r in report.rows]
    norms = [r.norm if r.norm is not None and r.norm > 0 and math.isfinite(r.norm) else float("nan")
             for r in report.rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.4 * len(names)), 4))
    ax.bar(range(len(names)), norms, color=["tab:red" if r.problems else "tab:blue" for r in report.rows])
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_ylabel("gradient L2 norm")
    ax.set_title("gradient norm per parameter (red: problem)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
