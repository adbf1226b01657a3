"""Running a small program under the watch inside the test process: what the runtime checks' tests use.

``torchcheck run`` runs the program in its own process the same way (``program.run`` inside a
``Watcher``); running it here instead saves a process start and a torch import per case (seconds on a
2-core machine). The command line itself is tested as a subprocess in tests/lint/test_cli_run.py and
tests/plugin/test_watch_checks.py.
"""

from __future__ import annotations

import os
import textwrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from lint_rules.diagnostics import Finding


class Watched:
    """What a watched run gave: its findings (as the JSON report has them), exit code and check errors."""

    def __init__(self, findings: list[Finding], code: int, errors: list[str]) -> None:
        self.findings = findings
        self.code = code
        self.errors = errors

    @property
    def lines(self) -> list[tuple[str, int]]:
        """(code, line) of each finding."""
        return [(f.code, f.line) for f in self.findings]

    def messages(self, code: str) -> list[str]:
        return [f.message for f in self.findings if f.code == code]


def watch_program(tmp_path: Path, source: str, select: list[str] | None = None, *, name: str = "train.py",
                  files: dict[str, str] | None = None, args: list[str] | None = None) -> Watched:
    """Write ``source`` (dedented) to ``tmp_path/name`` (and ``files``, more modules beside it), run it as
    ``torchcheck run [--select ...] name args`` would, in this process, from ``tmp_path``."""
    import sys

    from pytest_torchcheck.watch import program
    from pytest_torchcheck.watch.watcher import Watcher

    for extra, text in (files or {}).items():
        (tmp_path / extra).write_text(textwrap.dedent(text))
    (tmp_path / name).write_text(textwrap.dedent(source))
    modules = {m[:-3] for m in (files or {})}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    watcher = Watcher(select)
    try:
        outcome = program.run(name, None, list(args or []), lambda body: _within(watcher, body))
    finally:
        os.chdir(cwd)
        for m in modules:  # the next program's module of that name is its own
            sys.modules.pop(m, None)
    return Watched(watcher.findings, outcome.code, watcher.errors)


def _within(watcher, body) -> None:
    with watcher:
        body()


def line_of(source: str, marker: str) -> int:
    """The 1-based line of the only line of ``source`` (dedented) that contains ``marker``."""
    lines = [i for i, text in enumerate(textwrap.dedent(source).splitlines(), 1) if marker in text]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


def drive(tmp_path_factory, name: str, *args: str) -> dict[str, dict]:
    """Run tests/plugin/watch_corpus/driver.py (many programs in one process: one torch import) with
    ``args``; each program's outcome by its id (``case/buggy``, ``script/<name>``, ...).

    The run is done once per test session, not once per xdist worker: its results are written to
    ``<name>.json`` in the directory the workers share, under a file lock (pytest-xdist's documented
    recipe), and a worker that comes second reads them."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / f"{name}.json"
    with FileLock(str(out) + ".lock"):
        if not out.exists():
            repo = Path(__file__).resolve().parents[2]
            partial = out.with_suffix(".partial")
            done = subprocess.run([sys.executable, str(repo / "tests" / "plugin" / "watch_corpus" / "driver.py"),
                                   str(partial), *args], cwd=repo, capture_output=True, text=True, timeout=600,
                                  env={**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"})
            assert done.returncode == 0, f"the corpus driver failed:\n{done.stdout}\n{done.stderr}"
            partial.replace(out)
    return {p["id"]: p for p in json.loads(out.read_text())["programs"]}
