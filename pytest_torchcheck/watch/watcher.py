"""The watch: install the selected checks on torch's entry points, collect their findings, restore torch.

``with Watcher(codes, max_steps=N) as watcher: ...`` patches torch while the block runs (see
:mod:`.events`); :attr:`Watcher.findings` then holds every check's findings, sorted. The checks are
the modules ``checks/trnNNN_<name>.py``, found by name without importing the others: a new check is
one new file.
"""

from __future__ import annotations

from pytest_torchcheck.watch.check import Check
from pytest_torchcheck.watch.events import Events, StopProgram

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

    from lint_rules.diagnostics import Finding


def check_modules() -> dict[str, str]:
    """Each check's code and module name, read from the folder (``trn101_x.py`` -> TRN101)."""
    from lint_rules.registry import runtime_check_modules

    return runtime_check_modules()


def codes() -> list[str]:
    """The codes of the runtime checks, sorted."""
    return sorted(check_modules())


def select_checks(select: list[str], ignore: list[str], select_source: str,
                  ignore_source: str) -> tuple[list[str], bool]:
    """The runtime checks that ``select`` (default: :func:`default_codes`) less ``ignore`` name, each code or
    prefix validated as the linter validates it (a UsageError naming a bad one), and whether a selection
    was given that names no runtime check at all (the caller warns). One answer for ``torchcheck run``
    and the pytest form."""
    from lint_rules import registry

    available = set(codes())
    chosen = registry.expand(select, select_source) if select else set(default_codes())
    chosen -= registry.expand(ignore, ignore_source)
    return sorted(chosen & available), bool(select) and not chosen & available


def default_codes() -> list[str]:
    """The codes of the checks that run when none is selected: all but the opt-in ones (``DEFAULT = False``)."""
    return [code for code in codes() if check_class(code).DEFAULT]


def check_class(code: str) -> type[Check]:
    from lint_rules.registry import runtime_check

    found = runtime_check(code)
    if found is None:
        raise KeyError(f"no runtime check {code}")
    return found


class StepLimitReached(StopProgram):
    """``--max-steps``: the program ran its number of optimizer steps and was ended cleanly."""


class Watcher:
    """Runs the checks whose codes are ``selected`` (default: :func:`default_codes`) while its ``with``
    block runs."""

    def __init__(self, selected: Iterable[str] | None = None, *, max_steps: int | None = None) -> None:
        from pytest_torchcheck.watch.sites import Sites

        chosen = default_codes() if selected is None else sorted(set(selected) & set(codes()))
        self.checks: list[Check] = [check_class(code)() for code in chosen]
        self.max_steps = max_steps
        self.events = Events(Sites())
        self.findings: list[Finding] = []
        self.stopped = False  # ended by max_steps
        from pytest_torchcheck.watch.compiled import CompileSites

        self.compiled = CompileSites()  # where the program called torch.compile

    def __enter__(self) -> Watcher:
        try:
            for check in self.checks:  # subscribed first: what no check needs is not patched
                check.install(self.events)
            if self.max_steps is not None:
                self.events.subscribe(self)
            self.compiled.install(self.events)
            self.events.install()
        except BaseException:
            self.events.uninstall()
            raise
        return self

    def on_step_post(self, optimizer: object) -> None:
        if self.max_steps is not None and self.events.steps >= self.max_steps and not self.stopped:
            self.stopped = True
            raise StepLimitReached(0)

    def __exit__(self, *exc: object) -> None:
        try:
            for check in self.checks:
                try:
                    check.finish()
                except Exception as e:
                    self.events.errors.append((check, e))
                check.uninstall()
        finally:
            self.events.uninstall()
        from lint_rules.diagnostics import Finding

        self.findings = sorted((f for check in self.checks for f in check.findings), key=Finding.sort_key)

    @property
    def errors(self) -> list[str]:
        """One line per exception a check raised (its handler was skipped, the program went on)."""
        return [f"{getattr(c, 'CODE', c)}: {type(e).__name__}: {e}" for c, e in self.events.errors]
