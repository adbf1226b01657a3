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


def did_you_mean(value: str, choices, *, spelled: dict | None = None, cutoff: float = 0.6) -> str:
    """`` (did you mean 'select'?)`` for the choice closest to a misspelt ``value``, else ``""``.

    ``spelled`` maps other spellings to the choice they stand for (a rule's name to its code). Short
    values want a higher ``cutoff``: any two codes TRNnnn share two thirds of their characters."""
    import difflib  # here: only a bad value pays for it

    candidates = [*choices, *(spelled or {})]
    close = difflib.get_close_matches(value, candidates, n=1, cutoff=cutoff)
    if not close:
        return ""
    best = close[0]
    if spelled and best in spelled:
        return f" (did you mean {spelled[best]!r}, {best}?)"
    return f" (did you mean {best!r}?)"
