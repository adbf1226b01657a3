"""Per-machine time baselines: ``--torchcheck-baseline-save NAME`` / ``--torchcheck-baseline-compare NAME``.

One JSON file per (test, region) under ``<dir>/<NAME>/``, written atomically, so pytest-xdist workers
never write the same file and a baseline can be saved and compared in parallel runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_torchcheck.budgets import units


@dataclass(frozen=True)
class Baselines:
    directory: Path
    save: str | None
    compare: str | None
    tolerance: float
    tolerance_source: str

    @property
    def active(self) -> bool:
        return bool(self.save or self.compare)

    def path(self, name: str, test_id: str, region: str) -> Path:
        key = f"{test_id}::{region}"
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", key)[-120:].strip("_")
        digest = hashlib.sha1(key.encode()).hexdigest()[:10]
        return self.directory / name / f"{safe}-{digest}.json"


def machine() -> dict:
    import torch

    info = {"node": platform.node(), "machine": platform.machine(), "processor": platform.processor(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
            "torch_threads": torch.get_num_threads()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        info["cuda_device"] = torch.cuda.get_device_name()
    return info


def save(b: Baselines, test_id: str, region: str, times: list[float], method: str) -> Path:
    path = b.path(b.save, test_id, region)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"test": test_id, "region": region, "median_s": sorted(times)[len(times) // 2] if len(times) % 2 else
            sum(sorted(times)[len(times) // 2 - 1:len(times) // 2 + 1]) / 2,
            "times_s": times, "method": method, "machine": machine()}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    os.replace(tmp, path)
    return path


@dataclass
class Comparison:
    path: Path
    baseline: float | None  # None: no baseline saved for this region
    measured: float
    tolerance: float
    error: str = ""

    @property
    def ratio(self) -> float:
        return self.measured / self.baseline if self.baseline else float("inf")

    @property
    def ok(self) -> bool:
        return self.baseline is None or self.ratio <= self.tolerance

    def describe(self) -> list[str]:
        return [f"time vs baseline: median {units.format_time(self.measured)} is {self.ratio:.2f}x the baseline "
                f"{units.format_time(self.baseline)} ({self.path}), tolerance {self.tolerance:g}x",
                "  likely cause: the region got slower (more work per step, a new sync, a slower kernel), or the "
                "machine is not the one the baseline was saved on"]


def compare(b: Baselines, test_id: str, region: str, measured: float) -> Comparison:
    path = b.path(b.compare, test_id, region)
    try:
        data = json.loads(path.read_text())
        base = float(data["median_s"])
    except FileNotFoundError:
        return Comparison(path, None, measured, b.tolerance)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Comparison(path, None, measured, b.tolerance, error=f"unreadable baseline {path}: {e}")
    return Comparison(path, base, measured, b.tolerance)
