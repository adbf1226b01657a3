"""Install commands: every install line torchcheck prints is built here, and each works as printed.

The ``pytest-torchcheck`` distribution is on no package index, so ``pip install
'pytest-torchcheck[server]'`` fails. A hint therefore names what an extra adds (its requirements
are on PyPI) for the interpreter running torchcheck, and the checkout form of the extra.
``docs/install.md`` documents the same forms, and the git form with its URL explained.
"""

from __future__ import annotations

import sys

# The `server` extra of pyproject.toml, repeated because an installed torchcheck has no pyproject.toml
# to read; tests/lint/test_install.py keeps the two equal.
SERVER_REQUIREMENTS: tuple[str, ...] = ("pygls>=2.0",)
PLUGIN_REQUIREMENTS: tuple[str, ...] = ("torch>=2.2", "pytest>=8.0", "numpy>=1.22")
STRATEGIES_REQUIREMENTS: tuple[str, ...] = ("torch>=2.2", "hypothesis>=6.80", "pytest>=8.0", "numpy>=1.22")


def _quoted(word: str) -> str:
    # Double quotes: the same line works in POSIX shells, PowerShell and cmd.exe.
    return f'"{word}"' if any(c in word for c in ' <>[];&|()$') else word


def pip_install(*requirements: str) -> str:
    """The pip command that installs ``requirements`` into the interpreter running torchcheck.

    ``sys.executable``, not ``python``: in a pipx or virtual environment a bare ``python`` is often
    another interpreter, and the install would land where torchcheck never looks."""
    return " ".join([_quoted(sys.executable), "-m", "pip", "install", *(_quoted(r) for r in requirements)])


def from_checkout(extra: str) -> str:
    """Install torchcheck with ``extra`` from a checkout of its repository (run at its root)."""
    return f'python -m pip install ".[{extra}]"'


def server_hint() -> str:
    """How to get what ``torchcheck server`` needs (the ``server`` extra)."""
    return (f"{pip_install(*SERVER_REQUIREMENTS)} (what the `server` extra adds; "
            f"at the root of a torchcheck checkout, {from_checkout('server')} does the same)")


def extra_hint(extra: str) -> str:
    """How to get what the ``plugin`` or ``strategies`` extra adds, as :func:`server_hint` says it."""
    requirements = {"plugin": PLUGIN_REQUIREMENTS, "strategies": STRATEGIES_REQUIREMENTS,
                    "server": SERVER_REQUIREMENTS}[extra]
    return (f"{pip_install(*requirements)} (what the `{extra}` extra adds; "
            f"at the root of a torchcheck checkout, {from_checkout(extra)} does the same)")
