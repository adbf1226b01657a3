"""torchrun mode: pytest itself was launched once per rank by torchrun, SLURM or another launcher."""

from __future__ import annotations

import os


def launched_by_torchrun() -> bool:
    env = os.environ
    return all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


class TorchrunSession:
    def __init__(self, config) -> None:
        self.config = config
