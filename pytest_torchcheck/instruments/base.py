"""The instrument protocol: what one budget instrument declares and does, and the table of them by name.

Pure Python (no torch), so that an instrument module can import it before anything heavy.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, TypeVar

from pytest_torchcheck.instruments.measurement import Measurement

# When an instrument is on (its SCOPE):
RUN = "run"  # around the one measured run of the region
REGION = "region"  # around all of it: warm-up, the measured run and the repeats (it counts events in every run)
REPEATS = "repeats"  # each repeated run goes through its wrap() (time, memory held after each run)
SCOPES = (RUN, REGION, REPEATS)


class Instrument:
    """One thing a budget measures, under the name its budget keys give as ``Key.instrument``.

    The orchestration (``budgets.measure``) makes one instance per measured region with the set of
    instrument names the region needs, calls ``start()`` and ``stop()`` around its scope (in ORDER,
    outermost first; stopped in reverse), then ``fill(m)`` to put what it measured into the
    Measurement. A key whose ``Key.check`` is empty is checked by the instrument's own ``check``.
    """

    NAME: ClassVar[str] = ""  # what budgets.spec's keys name as their instrument
    WHAT: ClassVar[str] = ""  # what it measures, one line
    SCOPE: ClassVar[str] = RUN
    # Position among the instruments of one scope, outermost first: torch's modes stack, and which one
    # is inside decides whose operators the other sees.
    ORDER: ClassVar[int] = 100

    def __init__(self, need: frozenset[str]) -> None:
        self.need = need  # every instrument the region needs: one may read its neighbours' presence

    def start(self) -> None:
        """Begin measuring."""

    def stop(self) -> None:
        """Stop measuring (also when the region raised)."""

    def fill(self, m: Measurement) -> None:
        """Put what was measured into ``m``; called after a region that completed."""

    def again(self) -> bool:
        """A RUN instrument whose reading was disturbed: measure one more run with a fresh instance alone."""
        return False

    def wrap(self, call: Callable[[], Any]) -> Callable[[], Any]:
        """A REPEATS instrument: ``call`` (one repeated run) with the instrument's readings around it."""
        return call

    @classmethod
    def check(cls, key: str, m: Measurement, limit: Any) -> tuple[str, list[str]] | None:
        """For a key with no shared check: None within ``limit``, else (headline, message lines)."""
        raise NotImplementedError(f"instrument {cls.NAME!r} has no check of its own; declare the key's check")

    def __enter__(self) -> Instrument:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# Every instrument, by NAME. The built-in modules register theirs when registry.load() imports them.
REGISTRY: dict[str, type[Instrument]] = {}

InstrumentClass = TypeVar("InstrumentClass", bound=type[Instrument])


def register(cls: InstrumentClass) -> InstrumentClass:
    """Class decorator: make ``cls`` the instrument for budget keys whose ``Key.instrument`` is its NAME."""
    if not cls.NAME or cls.SCOPE not in SCOPES:
        raise ValueError(f"instrument {cls.__qualname__}: NAME must be set and SCOPE one of {SCOPES}; "
                         f"got NAME={cls.NAME!r}, SCOPE={cls.SCOPE!r}")
    other = REGISTRY.get(cls.NAME)
    if other is not None and (other.__module__, other.__qualname__) != (cls.__module__, cls.__qualname__):
        # (the same class again is a module reloaded)
        raise ValueError(f"instrument name {cls.NAME!r} is taken by {other.__module__}.{other.__qualname__}")
    REGISTRY[cls.NAME] = cls
    return cls
