"""Finding the instruments: every module of this package is imported once, and the instruments they
register are picked by the names a budget's limits give."""

from __future__ import annotations

import importlib
import pkgutil

from pytest_torchcheck.instruments.base import REGISTRY, Instrument

_loaded = False


def load() -> dict[str, type[Instrument]]:
    """Every instrument by name: the package's own modules, imported here once, and any registered elsewhere."""
    global _loaded
    if not _loaded:
        package = importlib.import_module("pytest_torchcheck.instruments")
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
        _loaded = True
    return REGISTRY


def get(name: str) -> type[Instrument]:
    found = load().get(name)
    if found is None:
        raise LookupError(f"no instrument {name!r} is registered; registered: {', '.join(sorted(REGISTRY))}")
    return found


def select(need: frozenset[str] | set[str], scope: str) -> list[type[Instrument]]:
    """The instruments of ``scope`` among the names ``need``, outermost first."""
    return sorted((get(name) for name in need if get(name).SCOPE == scope), key=lambda cls: (cls.ORDER, cls.NAME))
