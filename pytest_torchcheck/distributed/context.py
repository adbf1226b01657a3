"""Where the rank fixtures read their values: set once per rank process (or torchrun launch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class RankContext:
    rank: int
    world_size: int
    backend: str
    device: str  # "cpu" or "cuda:<local rank>"
    launcher: str  # "harness" (ranks started by torchcheck) or "torchrun" (launched by an external launcher)
    group: Any = None  # the default process group once initialised


CURRENT: Optional[RankContext] = None
