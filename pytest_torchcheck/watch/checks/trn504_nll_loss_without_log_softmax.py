"""TRN504 at run time: ``nll_loss`` was given values that are not log-probabilities."""

from __future__ import annotations

from pytest_torchcheck.watch.check import plural
from pytest_torchcheck.watch.checks._common import SampledLossCheck, argument, class_dim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# log of a row's probability mass above which it is not a distribution: 10.5% more mass than 1, far above
# rounding in half precision and above log(p + eps) over 100,000 classes with eps = 1e-6
TOLERANCE = 0.1


def unnormalised_rows(x: Any, target: Any, ignore_index: int) -> tuple[int, int, float, float] | None:
    """(rows whose exp() sums to more than 1, rows looked at, the smallest and largest such sum) over the rows
    whose target is not ``ignore_index``; None when every row could be log-probabilities of some classes of a
    distribution. Rows whose sum is not finite (NaN, all -inf) are left out. One host sync."""
    import torch

    dim = class_dim(x)
    classes = x.shape[dim]
    with torch.no_grad():
        rows = x.detach().float().movedim(dim, -1).reshape(-1, classes)
        lse = torch.logsumexp(rows, dim=-1)
        keep = torch.isfinite(lse)
        if isinstance(target, torch.Tensor) and not target.is_floating_point() and target.numel() == lse.numel():
            keep &= target.reshape(-1).to(lse.device) != ignore_index
        bad = keep & (lse > TOLERANCE)
        inf = torch.tensor(float("inf"), device=lse.device)
        count, seen, low, high = torch.stack([
            bad.sum().float(), keep.sum().float(),
            torch.where(bad, lse, inf).min(), torch.where(bad, lse, -inf).max()]).tolist()
    if not count:
        return None
    return int(count), int(seen), _exp(low), _exp(high)


def _exp(x: float) -> float:
    import math

    return math.exp(x) if x < 700 else math.inf  # logits running away: their mass overflows a float


class NllLossWithoutLogSoftmax(SampledLossCheck):
    """
    Observed: a call of `torch.nn.functional.nll_loss` (which `nn.NLLLoss` makes) whose input holds values
    that cannot be log-probabilities: for at least one sample, the exponentials of its class values (along
    the class dimension) sum to more than 1.1, more probability mass than any distribution has. Raw
    logits and softmax probabilities (whose exponentials sum to more than the number of classes times
    e^(1/classes)) fail it; `log_softmax()` outputs, `log()` of probabilities, and log-probabilities of
    some of the classes only (a mass below 1) never do. Samples whose target is `ignore_index` (padding) and samples whose values are NaN
    or all `-inf` are left out. Checked on a sample of the calls (the first 8, then one in 32), on
    every call when the input came from `softmax()`, each check costing one reduction.
    """

    CODE = "TRN504"
    NAME = "nll-loss-without-log-softmax"
    SEVERITY = "error"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    LOSS = "torch.nn.functional.nll_loss"

    def judge(self, x: Any, softmax: bool, args: tuple, kwargs: dict) -> None:
        found = unnormalised_rows(x, argument(args, kwargs, 1, "target"), argument(args, kwargs, 4, "ignore_index", -100))
        if found is None:
            return
        bad, seen, low, high = found
        span = f"{low:.3g}" if low == high else f"{low:.3g} to {high:.3g}"
        advice = ("they came from softmax(): use log_softmax()" if softmax else
                  "apply log_softmax() first, or use cross_entropy() on the logits")
        self.report(self.site(),
                    f"nll_loss() was given values that are not log-probabilities: in {bad} of "
                    f"{plural(seen, 'sample')} the exp() of the {x.shape[class_dim(x)]} class values sums to "
                    f"{span}, more than any distribution; nll_loss only negates the value at the target, so the loss is unbounded "
                    f"(raw logits) or meaningless (probabilities): {advice}")
