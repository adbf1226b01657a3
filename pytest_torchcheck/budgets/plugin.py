"""Hooks of the budgets (registered by ``pytest_torchcheck.plugin``); imports no torch."""

from __future__ import annotations
