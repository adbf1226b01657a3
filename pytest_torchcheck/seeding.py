"""Per-test seeds derived from a base seed and the test id, stable across processes."""

from __future__ import annotations

import random
import sys


def derive_seed(base: int, nodeid: str) -> int:
    """A 32-bit seed (NumPy's limit) from the base seed and the test id."""
    import hashlib  # here, not at plugin load: pytest start-up stays lean

    digest = hashlib.sha256(f"{base}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


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
