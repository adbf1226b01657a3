"""Hypothesis strategies for tensors. Needs only Hypothesis and torch (not NumPy).

Values are finite and bounded by default (``-1e3..1e3`` for floats), so a
property test fails for the code under test, not for an overflow in the test.
The ``torchcheck`` profile (no deadline: the first torch call in a process can
take far longer than Hypothesis's 200 ms default; no too-slow health check) is
registered when Hypothesis is imported (``pytest_torchcheck.hypothesis_profile``,
through Hypothesis's entry points), so a ``conftest.py`` needs only::

    from hypothesis import settings
    settings.load_profile("torchcheck")
"""

from __future__ import annotations

import math
from typing import Any, Sequence

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as e:  # the plugin extra leaves Hypothesis out: say which extra brings it
    if e.name != "hypothesis":
        raise
    from lint_rules.install import extra_hint

    raise ModuleNotFoundError(
        "pytest_torchcheck.strategies needs Hypothesis, which is not installed; install the strategies extra: "
        + extra_hint("strategies"), name="hypothesis") from None

from pytest_torchcheck.hypothesis_profile import register_profile

register_profile()  # again, for a checkout used without installing (no entry point): it is idempotent

_FLOAT_WIDTH = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}


def shapes(min_dims: int = 1, max_dims: int = 3, min_side: int = 1, max_side: int = 8) -> st.SearchStrategy[tuple]:
    """Tensor shapes: tuples of ``min_dims..max_dims`` sides in ``min_side..max_side``."""
    if min_dims < 0 or max_dims < min_dims or min_side < 0 or max_side < min_side:
        raise ValueError(f"shapes: need 0 <= min_dims <= max_dims and 0 <= min_side <= max_side, got "
                         f"min_dims={min_dims}, max_dims={max_dims}, min_side={min_side}, max_side={max_side}")
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def _default_elements(dtype: Any) -> st.SearchStrategy:
    import torch

    name = str(dtype).replace("torch.", "")
    if dtype == torch.bool:
        return st.booleans()
    if dtype.is_floating_point:
        width = _FLOAT_WIDTH.get(name, 32)
        bound = 1e3 if width > 16 else 6e2
        return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=width)
    if dtype.is_complex:
        return st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False)
    info = torch.iinfo(dtype)
    return st.integers(max(info.min, -1000), min(info.max, 1000))


@st.composite
def tensors(draw: Any, shape: Sequence[int] | st.SearchStrategy | None = None, dtype: Any = None,
            elements: st.SearchStrategy | None = None, device: Any = "cpu",
            requires_grad: bool = False) -> Any:
    """A tensor of ``shape`` (a tuple or a strategy; default ``shapes()``) and ``dtype``
    (default float32), with values from ``elements`` (default: finite, bounded)."""
    import torch

    dtype = dtype or torch.float32
    if shape is None:
        shape = shapes()
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    # Not ``elements or ...``: bool() of a strategy is always True and Hypothesis warns on every draw.
    elements = elements if elements is not None else _default_elements(dtype)
    values = draw(st.lists(elements, min_size=n, max_size=n))
    t = torch.tensor(values, dtype=dtype).reshape(shape).to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
