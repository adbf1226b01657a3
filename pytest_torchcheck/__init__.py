"""torchcheck's pytest plugin: runtime checks for PyTorch training code.

Importing this package does not import torch: the public names below are
loaded on first use (PEP 562), so a test suite that never touches torch does
not pay for it.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "TorchcheckFailure": "pytest_torchcheck.errors",
    "TorchcheckUsageError": "pytest_torchcheck.errors",
    "assert_gradcheck": "pytest_torchcheck.gradcheck",
    "assert_finite": "pytest_torchcheck.anomaly",
    "NanGuard": "pytest_torchcheck.anomaly",
    "nan_guard": "pytest_torchcheck.anomaly",
    "assert_grad_flow": "pytest_torchcheck.gradflow",
    "GradFlowReport": "pytest_torchcheck.gradflow",
    "assert_params_update": "pytest_torchcheck.sanity",
    "assert_optimizer_covers": "pytest_torchcheck.sanity",
    "assert_loss_at_init": "pytest_torchcheck.sanity",
    "assert_overfits": "pytest_torchcheck.sanity",
    "assert_batch_independent": "pytest_torchcheck.sanity",
    "assert_modules_registered": "pytest_torchcheck.sanity",
    "assert_deterministic": "pytest_torchcheck.sanity",
    "assert_step_gradients": "pytest_torchcheck.grads",
    "assert_no_graph_retained": "pytest_torchcheck.graphs",
    "assert_eval_mode": "pytest_torchcheck.modes",
    "assert_train_mode": "pytest_torchcheck.modes",
    "BudgetFixture": "pytest_torchcheck.budgets.region",
    "BudgetUsageError": "pytest_torchcheck.budgets.spec",
    "WatchFixture": "pytest_torchcheck.watch.pytest_form",
    "assert_ddp_matches_single_process": "pytest_torchcheck.ddp",
    "assert_replicas_in_sync": "pytest_torchcheck.ddp",
    "assert_sampler_reshuffles": "pytest_torchcheck.ddp",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_torchcheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
