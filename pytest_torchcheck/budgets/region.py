"""Running a region under a budget: the shared path of the marker and of the ``budget`` fixture."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from pytest_torchcheck.budgets import baseline as baselines
from pytest_torchcheck.budgets import spec
from pytest_torchcheck.budgets.baseline import Baselines
from pytest_torchcheck.budgets.spec import Budget, BudgetUsageError


@dataclass
class Context:
    """What a region needs to know about its test: its id, the defaults and the baseline settings."""

    test_id: str
    defaults: list[tuple[dict[str, Any], str]]
    baselines: Baselines
    regions: dict[str, int] = field(default_factory=dict)  # region name -> times used in this test

    def region_key(self, name: str) -> str:
        n = self.regions.get(name, 0)
        self.regions[name] = n + 1
        return name if n == 0 else f"{name}#{n + 1}"


def skip_unsupported(budget: Budget) -> None:
    """Skip (never pass with a zero) when a limit cannot be measured here."""
    __tracebackhide__ = True
    from pytest_torchcheck.budgets import measure

    cuda = sorted(spec.CUDA_KEYS & set(budget.limits))
    if cuda and not measure.cuda_available():
        import torch

        raise pytest.skip.Exception(f"budget {', '.join(cuda)} needs CUDA: torch.cuda.is_available() is False "
                                    f"(torch {torch.__version__}); the limit is not checked on this machine",
                                    _use_item_location=True)
    memory = sorted(spec.HOST_MEMORY_KEYS & set(budget.limits))
    if memory and measure.cpu_in_use is None:
        raise pytest.skip.Exception(f"budget {', '.join(memory)}: {measure.CPU_MEMORY_UNAVAILABLE}",
                                    _use_item_location=True)


def _where(ctx: Context, region: str) -> Any:
    from pytest_torchcheck.budgets.report import Where, current_device, current_rank

    return Where(ctx.test_id, region, current_rank(), current_device())


def run_function(fn: Callable[[], Any], budget: Budget, ctx: Context, region: str) -> Any:
    """Warm up, measure, compare with baselines, and fail on any exceeded limit. Returns the Measurement."""
    __tracebackhide__ = True
    from pytest_torchcheck.budgets.measure import attribute_cpu_memory, measure_function
    from pytest_torchcheck.budgets.report import Violation, check

    skip_unsupported(budget)
    key = ctx.region_key(region)
    b = ctx.baselines
    timed = "timer" in spec.instruments(budget.limits.keys()) or b.active
    keys = set(budget.limits)
    m = measure_function(fn, keys, budget.warmup, budget.repeats, timed)
    cpu_limit = budget.limits.get("cpu_memory")
    if cpu_limit is not None and m.cpu_peak is not None and m.cpu_peak > cpu_limit:
        attribute_cpu_memory(fn, m)  # over the limit: one more run names the largest allocations
    extra = []
    if b.compare and m.times:
        tolerance = budget.tolerance or b.tolerance
        result = baselines.compare(Baselines(b.directory, b.save, b.compare, tolerance, b.tolerance_source),
                                   ctx.test_id, key, m.time)
        if result.error:
            warnings.warn(pytest.PytestWarning(f"torchcheck budget: {result.error}; not compared"), stacklevel=2)
        elif result.baseline is None:
            warnings.warn(pytest.PytestWarning(
                f"torchcheck budget: no baseline {b.compare!r} for region {key!r} of {ctx.test_id} "
                f"({result.path}); save one with --torchcheck-baseline-save {b.compare}"), stacklevel=2)
        elif not result.ok:
            source = budget.sources.get("tolerance", b.tolerance_source)
            extra.append(Violation("baseline", f"time {result.ratio:.2f}x baseline > tolerance {tolerance:g}x",
                                   result.describe(),
                                   change=f"to change the limit: tolerance from {source}, or re-save the "
                                          f"baseline with --torchcheck-baseline-save {b.compare}"))
    if b.save and m.times:
        baselines.save(b, ctx.test_id, key, m.times, m.time_method)
    check(budget, m, _where(ctx, key), extra)
    return m


class BudgetFixture:
    """The ``budget`` fixture.

    ``with budget(syncs=0, cpu_memory="64MiB"):`` measures one run of the block;
    ``budget(train_step, warmup=1, time="20ms", memory_growth="0B")`` runs the function
    (warm-up and repeats included). Either fails the test on an exceeded limit and returns the measurement.
    """

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self.measurements: list[Any] = []
        self._closed = False

    def _budget(self, limits: dict[str, Any], source: str) -> Budget:
        __tracebackhide__ = True
        try:
            return spec.build(self._ctx.defaults + [(spec.parse_values(limits, source), source)])
        except BudgetUsageError as e:
            raise BudgetUsageError(str(e)) from None

    def __call__(self, fn: Callable[[], Any] | None = None, /, **limits: Any) -> Any:
        __tracebackhide__ = True
        if self._closed:
            raise BudgetUsageError("the budget fixture was used after its test ended")
        from pytest_torchcheck.instruments.sites import short_path  # torch is loaded: a test is running

        caller = sys._getframe(1)
        site = f"{short_path(caller.f_code.co_filename)}:{caller.f_lineno}"
        source = f"budget(...) at {site} in {self._ctx.test_id}"
        if fn is not None and not callable(fn):
            raise BudgetUsageError(f"{source}: the positional argument must be the region as a function "
                                   f"(e.g. budget(train_step, syncs=0)), got {fn!r}; limits go in keywords: "
                                   f"{spec.SIGNATURE}")
        budget = self._budget(limits, source)
        if fn is None:
            repeated = sorted(spec.REPEATED & set(limits))
            if repeated or (budget.warmup and "warmup" in limits):
                raise BudgetUsageError(
                    f"{source}: {', '.join(repeated)} need(s) the region to run more than once, which a `with` block "
                    f"cannot do; pass it as a function: budget(fn, {', '.join(f'{k}=...' for k in repeated)}) "
                    f"or use @pytest.mark.budget on the test")
            return self._block(budget, budget.name or f"with budget(...) at {site}")
        name = budget.name or getattr(fn, "__qualname__", None) or repr(fn)
        m = run_function(fn, budget, self._ctx, name)
        self.measurements.append(m)
        return m

    def _block(self, budget: Budget, region: str) -> _Block:
        budget = Budget(limits={k: v for k, v in budget.limits.items() if k not in spec.REPEATED},
                        warmup=0, repeats=budget.repeats, name=budget.name, sources=budget.sources)
        return _Block(self, budget, region)

    def close(self) -> None:
        self._closed = True


class _Block:
    """One run of a ``with budget(...)`` block. A class, not a generator, so that a failure's traceback ends
    at the user's ``with`` line instead of in contextlib."""

    def __init__(self, fixture: BudgetFixture, budget: Budget, region: str) -> None:
        self._fixture, self._budget, self._region = fixture, budget, region
        self._measuring: Any = None

    def __enter__(self) -> Any:
        __tracebackhide__ = True
        from pytest_torchcheck.budgets.measure import measure_block

        skip_unsupported(self._budget)
        self._key = self._fixture._ctx.region_key(self._region)
        self._measuring = measure_block(set(self._budget.limits))
        self._m = self._measuring.__enter__()
        return self._m

    def __exit__(self, *exc: Any) -> None:
        __tracebackhide__ = True
        from pytest_torchcheck.budgets.report import check

        self._measuring.__exit__(*exc)
        if exc[0] is None:
            self._fixture.measurements.append(self._m)
            check(self._budget, self._m, _where(self._fixture._ctx, self._key))
