"""Per-test seeds derived from a base seed and the test id, stable across processes."""

from __future__ import annotations

import random
import sys
from typing import Any


def derive_seed(base: int, nodeid: str) -> int:
    """A 32-bit seed (NumPy's limit) from the base seed and the test id."""
    digest = _sha256()(f"{base}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _sha256() -> Any:
    """SHA-256 from CPython's own small module: hashlib would load OpenSSL (about 3 ms) at the first test."""
    global _SHA256
    if _SHA256 is None:
        for module in ("_sha2", "_sha256", "hashlib"):  # Python >= 3.12, Python 3.11, any
            try:
                _SHA256 = __import__(module).sha256
                break
            except ImportError:
                continue
    return _SHA256


_SHA256: Any = None


def seed_everything(seed: int, import_torch: bool = False) -> None:
    """Seed ``random``, and torch and NumPy if they are imported (or ``import_torch``)."""
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is None and import_torch:
        import torch
    if torch is not None and hasattr(torch, "manual_seed"):
        # manual_seed seeds every device's default generator, but does not initialise CUDA.
        torch.manual_seed(seed)
