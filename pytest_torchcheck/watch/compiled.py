"""Where the watched program compiled code with ``torch.compile``: what some checks cannot see inside.

A function or module compiled by ``torch.compile`` runs a graph that dynamo traced: the calls inside it
(``.item()``, a module's hooks) are not made one by one, so a check that watches them
(``Check.SEES_COMPILED = False``) misses what happens there. ``torchcheck run`` says so once, naming
the first call of ``torch.compile`` (or ``Module.compile``) and those checks, instead of missing it
silently.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.events import Events
    from pytest_torchcheck.watch.sites import Site


class CompileSites:
    """The sites of the program's ``torch.compile`` / ``Module.compile`` calls, in order."""

    def __init__(self) -> None:
        self.sites: list[Site] = []
        self.events: Events | None = None

    def install(self, events: Events) -> None:
        self.events = events
        import torch

        events.intercept("torch.compile", pre=self._compiled, direct=True)
        if hasattr(torch.nn.Module, "compile"):
            events.intercept("torch.nn.Module.compile", pre=self._compiled, direct=True)

    def _compiled(self, args: tuple, kwargs: dict) -> None:
        assert self.events is not None
        site = self.events.site(2)
        if site is not None and site not in self.sites:
            self.sites.append(site)

    def note(self, checks: list[Any]) -> str | None:
        """The note for standard error, or None when nothing was compiled or every check sees through it."""
        blind = sorted(c.CODE for c in checks if not getattr(c, "SEES_COMPILED", True))
        if not self.sites or not blind:
            return None
        from pytest_torchcheck.watch.sites import display_path

        first = self.sites[0]
        more = f" (and {len(self.sites) - 1} more)" if len(self.sites) > 1 else ""
        cwd = self.events.sites.cwd if self.events is not None else None
        return (f"torchcheck: note: the program compiled code with torch.compile at "
                f"{display_path(first.path, cwd)}:{first.line}{more}; {', '.join(blind)} cannot see the calls "
                "made inside compiled code and may miss what happens there")
