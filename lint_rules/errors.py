"""Errors a user can act on. The CLI turns them into exit code 2 with the message."""

from __future__ import annotations


class TorchcheckError(Exception):
    """Base class: the message names the bad value, where it came from, and what is allowed."""


class UsageError(TorchcheckError):
    pass


class ConfigError(TorchcheckError):
    pass


class FileError(TorchcheckError):
    """One file could not be linted (unreadable, undecodable, nested too deeply): the run goes on with
    the other files and exits 2. The message names the file."""


class DecodeError(FileError):
    pass
