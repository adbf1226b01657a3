"""Errors a user can act on. The CLI turns them into exit code 2 with the message."""

from __future__ import annotations


class TorchcheckError(Exception):
    """Base class: the message names the bad value, where it came from, and what is allowed."""


class UsageError(TorchcheckError):
    pass


class ConfigError(TorchcheckError):
    pass
