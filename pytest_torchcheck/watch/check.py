"""The protocol of a runtime check, and what checks share about optimizers and gradients.

A check is one class in one module of :mod:`pytest_torchcheck.watch.checks` (``trnNNN_<name>.py``):
``CODE`` and ``NAME`` are those of the linter's rule for the same pitfall, ``SEVERITY`` its severity.
It defines ``on_<event>`` handlers for the events of :mod:`.events` it needs; :meth:`Check.install`
subscribes them, :meth:`Check.uninstall` drops them, :meth:`Check.finish` runs once when the program
ended (for verdicts over the whole run), and :meth:`Check.report` records a finding at a call site,
once per site. A check reports only what it watched happen: when what it saw could have another
explanation, it says nothing.
"""

from __future__ import annotations

from lint_rules.diagnostics import CERTAIN, Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

    from pytest_torchcheck.watch.events import Events
    from pytest_torchcheck.watch.sites import Site


class Check:
    """One runtime check (see the module's docstring)."""

    CODE = ""
    NAME = ""
    SEVERITY = "warning"
    # A runtime-only check (a TRN9xx code, no lint rule) documents itself as a rule does: a one-line
    # summary and a page ("## What it does", "## Why is this bad?", "## Example"). A check that shares
    # a rule's code has the rule's; its docstring becomes the "At run time" section of the rule's page.
    SUMMARY = ""
    DOC = ""
    # False for a check whose cost is too high to run unasked (a scan of every output): it runs only
    # when selected by code or prefix (``--select TRN904``); the cost of each is in benchmarks/README.md.
    DEFAULT = True

    @classmethod
    def summary(cls) -> str:
        return cls.SUMMARY

    @classmethod
    def documentation(cls) -> str:
        import textwrap

        return textwrap.dedent(cls.DOC).strip()

    @classmethod
    def observed(cls) -> str:
        """What the check watches and when it reports: its docstring."""
        import textwrap

        return textwrap.dedent(cls.__doc__ or "").strip()
    # False: the check watches calls that code compiled by torch.compile does not make (dynamo traces
    # them into a graph), so a compiled region hides them; ``torchcheck run`` then says so
    SEES_COMPILED = True

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._reported: set[tuple[str, int]] = set()
        self.events: Events | None = None

    def install(self, events: Events) -> None:
        self.events = events
        events.subscribe(self)

    def uninstall(self) -> None:
        if self.events is not None:
            self.events.unsubscribe(self)

    def finish(self) -> None:
        """The program has ended (or stopped): report what only the whole run shows."""

    def site(self) -> Site | None:
        """The user's statement whose call is being handled now."""
        assert self.events is not None
        return self.events.site(2)

    def construction_site(self, obj: object) -> Site | None:
        """The user's statement that built ``obj``, whose ``__init__`` is being handled now."""
        assert self.events is not None
        return self.events.sites.current(2, constructing=obj)

    def report(self, site: Site | None, message: str) -> bool:
        """Record a finding at ``site`` unless this check already reported there; False if it did
        (or there is no user frame to point at)."""
        if site is None or (site.path, site.line) in self._reported:
            return False
        self._reported.add((site.path, site.line))
        from pytest_torchcheck.watch.sites import display_path

        cwd = self.events.sites.cwd if self.events is not None else None
        self.findings.append(Finding(display_path(site.path, cwd), site.line, site.column, site.end_line,
                                     site.end_column, self.CODE, self.NAME, message, self.SEVERITY,
                                     confidence=CERTAIN))
        return True


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 step``, ``3 steps``: numbers in messages read as sentences."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def optimizer_params(optimizer: Any) -> list[Any]:
    """Every parameter an optimizer holds, in its groups' order."""
    return [p for group in optimizer.param_groups for p in group["params"]]


def cleared_ids(owner: Any) -> set[int]:
    """The ids of the parameters whose gradients ``owner.zero_grad()`` clears: an optimizer's or a module's."""
    import torch

    params = owner.parameters() if isinstance(owner, torch.nn.Module) else optimizer_params(owner)
    return {id(p) for p in params}


def nonzero(tensors: Iterable[Any], unknown: bool) -> list[bool]:
    """Whether each tensor holds any non-zero element (NaN and inf count as non-zero); ``unknown`` for a
    tensor that cannot be read cheaply (sparse, meta). One host sync per device, not per tensor."""
    import torch

    tensors = list(tensors)
    out: list[bool | None] = [None] * len(tensors)
    by_device: dict[Any, list[int]] = {}
    for i, t in enumerate(tensors):
        if t.layout != torch.strided or t.device.type == "meta":
            out[i] = unknown
        else:
            by_device.setdefault(t.device, []).append(i)
    with torch.no_grad():
        for indices in by_device.values():
            flags = torch.stack([tensors[i].ne(0).any() for i in indices]).tolist()
            for i, flag in zip(indices, flags):
                out[i] = bool(flag)
    return [bool(x) for x in out]


def frame_locals(frame: Any) -> dict:
    """A copy of a frame's local variables. Before Python 3.13, reading ``f_locals`` leaves a snapshot
    dict on a function's frame that keeps every local it saw alive after the function rebinds it (a
    step's loss, and its graph, one step longer): the snapshot is emptied once copied (a module's or a
    class body's namespace is the real one, and is left alone)."""
    snapshot = frame.f_locals
    copy = dict(snapshot)
    if type(snapshot) is dict and frame.f_code.co_flags & 0x1 and snapshot is not frame.f_globals:  # CO_OPTIMIZED
        snapshot.clear()
    return copy
