"""TRN501 at run time: ``cross_entropy`` was given probabilities (rows that sum to 1), not logits."""

from __future__ import annotations

import math

from pytest_torchcheck.watch.check import plural
from pytest_torchcheck.watch.checks._common import SampledLossCheck, class_dim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def probability_rows(x: Any, dim: int) -> tuple[int, float] | None:
    """(rows, largest deviation of a row's sum from 1) when every element of ``x`` is non-negative and every
    row along ``dim`` sums to 1 within the tolerance of its dtype; None otherwise. One host sync."""
    import torch

    if x.shape[dim] < 2:
        return None
    with torch.no_grad():
        xs = x.detach().float()
        low, deviation = torch.stack([xs.min(), (xs.sum(dim) - 1).abs().max()]).tolist()
    tolerance = 1e-3 if x.dtype in (torch.float32, torch.float64) else 1e-2
    if not (low >= 0 and deviation <= tolerance):  # NaN fails both
        return None
    return x.numel() // x.shape[dim], deviation


class SoftmaxBeforeCrossEntropy(SampledLossCheck):
    """
    Observed: a call of `torch.nn.functional.cross_entropy` (which `nn.CrossEntropyLoss` makes) whose
    input, the scores the loss takes for logits, holds probabilities: every element is non-negative and
    the scores of each sample (along the class dimension) sum to 1, within 1e-3 (1e-2 in half
    precision). Logits are never normalised like that unless a `softmax()` (or another normalisation)
    produced them. An input produced by `softmax()` is checked on every call; any other input on a
    sample of the calls (the first 8, then one in 32), each check costing one reduction. Inputs with a
    single class, and soft (probability) *targets*, are never reported.
    """

    CODE = "TRN501"
    NAME = "softmax-before-cross-entropy"
    SEVERITY = "error"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    LOSS = "torch.nn.functional.cross_entropy"

    def judge(self, x: Any, softmax: bool, args: tuple, kwargs: dict) -> None:
        dim = class_dim(x)
        found = probability_rows(x, dim)
        if found is None:
            return
        rows, deviation = found
        classes = x.shape[dim]
        source = "came from softmax(): its" if softmax else "holds probabilities:"
        self.report(self.site(),
                    f"cross_entropy() was given probabilities, not logits: the input {source} {classes} class "
                    f"scores are non-negative and sum to 1 in each of its {plural(rows, 'row')} (largest "
                    f"deviation {deviation:.1e}); cross_entropy applies log_softmax itself, so the loss is "
                    f"squashed towards log({classes}) = {math.log(classes):.3f} and the gradients shrink: "
                    f"pass the logits")
