"""Which devices exist, found without touching CUDA in the pytest process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass

_PROBE = (
    "import json, torch\n"
    "mps = getattr(torch.backends, 'mps', None)\n"
    "print(json.dumps({'cuda': torch.cuda.device_count(),"
    " 'mps': bool(mps is not None and mps.is_available()), 'torch': torch.__version__}))\n"
)
_DEVICE_RE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


@dataclass(frozen=True)
class Devices:
    names: tuple[str, ...]  # what torch_device is parametrized over
    cuda_count: int
    source: str  # where the answer came from


def probe() -> tuple[int, bool, str]:
    """CUDA device count and MPS availability, asked of a child process."""
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
        data = json.loads(out.stdout.strip().splitlines()[-1])
        return int(data["cuda"]), bool(data["mps"]), ""
    except Exception as e:  # no torch, a broken driver: report CPU only, say why
        return 0, False, f"device probe failed ({type(e).__name__}); assuming CPU only"


def parse_devices(value: str, source: str) -> tuple[str, ...]:
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    bad = [v for v in items if not _DEVICE_RE.match(v)]
    if bad or not items:
        from pytest_torchcheck.errors import TorchcheckUsageError

        raise TorchcheckUsageError(
            f"{source}: invalid device list {value!r}; use a comma-separated list of cpu, cuda, cuda:N, mps")
    return items


def detect(explicit: tuple[str, ...] | None, source: str) -> Devices:
    if explicit is not None:
        cuda = [d for d in explicit if d.startswith("cuda")]
        count = len([d for d in cuda if ":" in d])
        if "cuda" in explicit:
            count = max(count, probe()[0])
        return Devices(explicit, count, source)
    cuda, mps, note = probe()
    names = ["cpu"] + (["cuda"] if cuda else []) + (["mps"] if mps else [])
    return Devices(tuple(names), cuda, note or "detected in a subprocess")
