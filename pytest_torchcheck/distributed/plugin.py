"""Hooks of the DDP harness (registered by ``pytest_torchcheck.plugin``); imports no torch."""

from __future__ import annotations
