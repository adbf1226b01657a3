from __future__ import annotations

import os

pytest_plugins = ["pytester"]

# One torch thread per process, set before anything imports torch: the suite runs under pytest-xdist
# (one worker per core) and most tests start more torch processes (fixture scripts, pytester
# sessions, DDP ranks). With torch's default of one thread per core, every process's threads fight
# the other workers' for the same cores; on 2 cores a fixture script took twice the CPU time (5.4 s
# against 2.6 s) for models this small. A value the caller set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
