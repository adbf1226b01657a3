"""Running a command that starts processes of its own (torchrun and its ranks, pre-commit and its pip),
so that a time limit ends all of them.

``subprocess.run(..., capture_output=True, timeout=...)`` kills only the process it started, then waits
for its pipes to close: a grandchild still holding them (a torchrun rank waiting on a rendezvous, a pip
download) keeps that wait going for ever, and the suite hangs instead of failing. Here the command runs
in a session of its own, and on the time limit the whole session is killed, its output so far kept, and
the test fails naming the command and its limit.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

import pytest


def run(args: Sequence[str], *, timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)``, but a timeout
    kills every process the command started and fails the test with the output so far."""
    with subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(proc)
            out, err = proc.communicate()
            pytest.fail(f"{' '.join(map(str, args))} ran past its {timeout:g} s limit; every process it started "
                        f"was killed.\n--- stdout (end)\n{out[-3000:]}\n--- stderr (end)\n{err[-3000:]}")
        finally:
            if proc.poll() is None:  # an exception other than the timeout (KeyboardInterrupt)
                kill_session(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def kill_session(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and every process in its session (it must have been started with
    ``start_new_session=True``)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone, with everything it started
        pass
