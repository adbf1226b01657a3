"""Helpers for the plugin tests: every check runs in a real pytest subprocess via ``pytester``."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

import pytest

TIMEOUT = 120  # seconds; a hung inner session (a hook deadlock, a stuck xdist worker) fails instead of hanging


def refuse_import(package: str) -> str:
    """Python source that makes ``import <package>`` (and its submodules) fail as if it were not installed."""
    return textwrap.dedent(f'''
        import sys


        class _NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name == {package!r} or name.startswith({package + "."!r}):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None


        sys.meta_path.insert(0, _NotInstalled())
    ''')


@dataclass
class Inner:
    """Runs pytest in the pytester directory and reads its results."""

    pytester: pytest.Pytester

    def run(self, *args: str, hypothesis: bool = False) -> pytest.RunResult:
        """A subprocess run; ``-rA`` lists every outcome and ``--tb=short`` keeps failure messages compact.

        Hypothesis's pytest plugin is left out unless asked for: importing it costs more than half a
        second per run, and only the strategy tests report through it.
        """
        plugins = () if hypothesis else ("-p", "no:hypothesispytest")
        return self.pytester.runpytest_subprocess("-p", "no:cacheprovider", *plugins, "-rA", "--tb=short", *args,
                                                  timeout=TIMEOUT)

    @staticmethod
    def outcomes(result: pytest.RunResult) -> dict[str, str]:
        """Test name (``test_x`` or ``test_x[cpu]``) -> PASSED/FAILED/ERROR, from the short summary."""
        found = {}
        for line in result.outlines:
            m = re.match(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) \S+::(\S+)", line)
            if m:
                found[m.group(2)] = m.group(1)
        return found

    @staticmethod
    def message(result: pytest.RunResult, test: str) -> pytest.LineMatcher:
        """The ``E`` lines of ``test``'s failure (its exception message), without the ``E`` prefix."""
        lines = result.outlines
        header = re.compile(rf"^_+ {re.escape(test)} _+$")
        start = next((i for i, line in enumerate(lines) if header.match(line)), None)
        assert start is not None, f"no failure section for {test}:\n" + "\n".join(lines)
        block: list[str] = []
        for line in lines[start + 1:]:
            if line.startswith("E   "):
                block.append(line[4:])
            elif block or line.startswith("_"):
                break
        assert block, f"no exception message in the failure section of {test}"
        return pytest.LineMatcher(block)

    @staticmethod
    def assert_usage_error(result: pytest.RunResult, pattern: str) -> None:
        """The run stopped with a usage error whose one-line message matches ``pattern``: no traceback."""
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
        result.stderr.fnmatch_lines([pattern])
        assert "Traceback" not in result.stdout.str() + result.stderr.str()

    def read(self, name: str) -> str:
        return (self.pytester.path / name).read_text()


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Inner:
    """An Inner bound to this test's pytester directory, with a clean torchcheck environment."""
    # Under `pytest -n`, the outer worker's xdist variables would make the inner session look like a worker.
    for name in ("TORCHCHECK_SEED", "TORCHCHECK_DEVICES", "TORCHCHECK_NAN_GUARD",
                 "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "400")  # the short summary keeps each failure's first line whole
    return Inner(pytester)
