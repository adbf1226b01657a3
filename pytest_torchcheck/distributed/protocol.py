"""What the pytest process, the preloaded zygote and the rank processes say to each other.

Every process talks over an AF_UNIX socket in the session's private temporary
directory (mode 0700), wrapped in a ``multiprocessing.connection.Connection``;
messages are tuples whose first item names them. No TCP port is involved except
the ephemeral loopback ports gloo binds between ranks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
from multiprocessing.connection import Connection

PR_SET_PDEATHSIG = 1


def connect(path: str) -> Connection:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return Connection(sock.detach())


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Linux: this process gets ``sig`` when its parent dies, so no rank outlives a killed pytest."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the EOF on the parent's socket still ends the loop
        pass


def describe_status(status: int) -> str:
    """'exit code 3' or 'signal 11 (SIGSEGV)' from an ``os.waitpid`` status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "unknown"
        hint = {"SIGKILL": "; killed, often by the out-of-memory killer", "SIGSEGV": "; a segmentation fault",
                "SIGABRT": "; aborted, e.g. by a C++ exception or assertion"}.get(name, "")
        return f"signal {sig} ({name}{hint})"
    if os.WIFEXITED(status):
        return f"exit code {os.WEXITSTATUS(status)}"
    return f"status {status}"
