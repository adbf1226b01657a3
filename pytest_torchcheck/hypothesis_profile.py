"""The ``torchcheck`` Hypothesis profile, registered whenever Hypothesis is imported.

Hypothesis runs every function of the ``hypothesis`` entry-point group at the end
of its own import (``pyproject.toml`` names :func:`register_profile` there), so
``settings.load_profile("torchcheck")`` works in a ``conftest.py`` that imports
nothing from torchcheck, and with ``--hypothesis-profile=torchcheck``, while
loading the pytest plugin imports neither Hypothesis nor this module.
"""

from __future__ import annotations

PROFILE = "torchcheck"


def register_profile() -> None:
    """No deadline (the first torch call in a process can take far longer than 200 ms), no too-slow check."""
    from hypothesis import HealthCheck, settings

    settings.register_profile(PROFILE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
