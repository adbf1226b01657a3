"""Bytes malloc has handed out (glibc's ``mallinfo2()``), read by the CPU memory instruments.

No torch: torch's CPU tensors come from malloc, so this one number sees them and native allocations alike.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _load_mallinfo() -> Callable[[], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    fn.argtypes = []

    def in_use() -> int:
        m = fn()
        return m.uordblks + m.hblkhd  # bytes in use from malloc's heaps + its mmapped chunks

    return in_use


cpu_in_use = _load_mallinfo()
CPU_MEMORY_UNAVAILABLE = ("cpu_memory and memory_growth need glibc's mallinfo2() (Linux, glibc >= 2.33) to read "
                          "the bytes malloc has handed out; it is not available on this platform")
