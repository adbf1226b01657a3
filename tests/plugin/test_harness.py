"""The DDP harness's pool start, driven directly: connections that never say hello."""

from __future__ import annotations

import socket
import textwrap
import time

from pytest_torchcheck.distributed.harness import Harness, PoolKey


def test_a_connection_closed_before_its_hello_does_not_break_the_next_pool(tmp_path) -> None:
    # A rank killed between connecting and saying hello (a pool given up on while starting) leaves a
    # closed connection in the server's backlog; the next pool must skip it, not crash the session.
    test_file = tmp_path / "test_one.py"
    test_file.write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.distributed(world_size=2)
        def test_one(rank):
            pass
    """))
    harness = Harness(["-p", "no:cacheprovider", "-p", "no:randomly"], str(tmp_path), threads=1)
    try:
        harness._start_zygote()
        for payload in (b"", b"\x00\x00"):  # closed at once; closed mid-message
            stray = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            stray.connect(str(harness.dir / "harness.sock"))
            stray.sendall(payload)
            stray.close()
        pool = harness._start_pool(PoolKey(2, "gloo", 60.0), str(test_file), time.monotonic() + 120)
        assert sorted(pool.ranks) == [0, 1]
        assert all(r.ready for r in pool.ranks.values())
    finally:
        harness.close()
