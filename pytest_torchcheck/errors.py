"""The failure type every torchcheck assertion raises."""

from __future__ import annotations


class TorchcheckFailure(AssertionError):
    """A torchcheck check failed. ``check`` names the check (``assert_gradcheck``...).

    It is an AssertionError so pytest reports it as a test failure, and it pickles
    (``__reduce__``) so it can cross process boundaries from DDP ranks.
    """

    def __init__(self, message: str, check: str = "torchcheck") -> None:
        super().__init__(message)
        self.check = check

    def __reduce__(self):
        return (type(self), (str(self), self.check))


class TorchcheckUsageError(TypeError):
    """A torchcheck API or marker was called with bad arguments."""


def fail(message: str, check: str) -> None:
    __tracebackhide__ = True
    raise TorchcheckFailure(message, check)
