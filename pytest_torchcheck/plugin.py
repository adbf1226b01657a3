"""The ``pytest11`` entry point. Loading it imports neither torch nor CUDA.

The runtime checks (gradcheck, NaN/Inf guards, DDP harness, budgets) land here
as fixtures and markers; each imports torch only when a test uses it.
"""

from __future__ import annotations

import pytest

SEED_HELP = "base seed for torch, random and NumPy in each test (default: 0)"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcheck", "torchcheck: checks for PyTorch training code")
    group.addoption("--torchcheck-seed", type=int, default=None, dest="torchcheck_seed",
                    metavar="N", help=SEED_HELP)
    parser.addini("torchcheck_seed", SEED_HELP, default="0")


def pytest_report_header(config: pytest.Config) -> str:
    from pytest_torchcheck import __version__

    return f"torchcheck: {__version__}"
