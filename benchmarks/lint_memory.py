#!/usr/bin/env python
"""Peak memory of one linter worker over a large tree (issues #12 and #17).

Lints every ``*.py`` file of a large tree -- by default the installed torch
package, about 3,000 files -- in ONE process, file after file, as one worker of
``torchcheck lint`` does (``lint_rules.runner.lint_file``, no result cache), and
reports:

* the peak resident set size of the process (``ru_maxrss``), against the target
  of at most 300 MB, and what it was before the first file (imports);
* the memory still held after the run, per file linted (Python's allocations as
  ``tracemalloc`` counts them, after a collection), which must stay near zero:
  a linter that keeps something per file grows without bound on a monorepo;
* the floor: the peak of a bare ``libcst.parse_module`` of the largest file
  alone, in a fresh process. Any LibCST-based linter (TorchFix too) needs that
  much for that file's tree, so a corpus with one giant file (torch's
  ``common_methods_invocations.py``, 1.3 MB, parses to ~770 MB) cannot meet the
  target whatever the linter keeps; ``--exclude`` leaves such files out.

``--tracemalloc`` also reports tracemalloc's peak of Python allocations (it slows
the run about 3x). Exits 0 whatever the result: it is a benchmark.
"""

from __future__ import annotations

import argparse
import gc
from fnmatch import fnmatch
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

from _report import verdict  # a sibling module: benchmarks/ is on sys.path when run as a script

PEAK_TARGET_MB = 300.0


def corpus_default() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed: pass a directory to lint")
    return Path(list(spec.submodule_search_locations)[0])


def rss_mb() -> float:
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, help="tree to lint (default: the installed torch package)")
    ap.add_argument("--limit", type=int, default=None, metavar="N", help="lint only the first N files")
    ap.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                    help="leave out files whose path relative to the corpus matches (repeatable)")
    ap.add_argument("--tracemalloc", action="store_true", help="also report tracemalloc's peak (slower)")
    args = ap.parse_args(argv)
    root = args.corpus or corpus_default()
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts
                   and not any(fnmatch(p.relative_to(root).as_posix(), g) for g in args.exclude))[: args.limit]
    if not files:
        print(f"no Python files under {root}", file=sys.stderr)
        return 2

    from lint_rules.api import Settings, lint_file

    settings = Settings.resolve(isolated=True)  # the default rules, no cache
    import libcst  # noqa: F401 -- imported before the baseline, as a worker has it loaded

    gc.collect()
    base_rss = current_rss_mb()
    tracemalloc.start()
    trace_peak_on = args.tracemalloc
    if not trace_peak_on:
        tracemalloc.stop()
    held_before = _held(trace_peak_on)
    largest = max(files, key=lambda p: p.stat().st_size)
    lines = findings = 0
    half = len(files) // 2
    held_half = 0
    t0 = time.perf_counter()
    for i, path in enumerate(files):
        if i == half:
            held_half = _held(trace_peak_on)
        try:
            data = path.read_bytes()
        except OSError:
            continue
        lines += data.count(b"\n")
        findings += len(lint_file(path, settings, shown=str(path)).findings)
    elapsed = time.perf_counter() - t0
    held_after = _held(trace_peak_on)
    trace_peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace_peak_on else None
    peak = rss_mb()
    end_rss = current_rss_mb()

    per_file_second_half = (held_after - held_half) / max(1, len(files) - half)
    floor = parse_floor_mb(largest)
    print(f"corpus: {root} ({len(files)} files, {lines} lines; largest {largest.relative_to(root)}, "
          f"{largest.stat().st_size // 1024} KiB); {findings} findings in {elapsed:.1f} s")
    print(f"resident memory: {base_rss:.0f} MB after imports, {end_rss:.0f} MB at the end, peak {peak:.0f} MB")
    if trace_peak_on:
        print(f"held after the run (gc'd, Python allocations): {(held_after - held_before) / 2**20:.1f} MB in all, "
              f"{per_file_second_half:.0f} bytes per file over the second half")
    else:
        print(f"held after the run (gc'd, live Python objects' memory blocks): {held_after - held_before} in all, "
              f"{per_file_second_half:.1f} per file over the second half")
    if trace_peak is not None:
        print(f"tracemalloc peak of Python allocations: {trace_peak:.0f} MB")
    print(f"floor: a bare libcst.parse_module of the largest file alone peaks at {floor:.0f} MB; "
          f"the linter's run peaks {peak - floor:+.0f} MB above it")
    print(f"target: peak resident memory of one worker <= {PEAK_TARGET_MB:.0f} MB: {peak:.0f} MB -> "
          f"{verdict(peak <= PEAK_TARGET_MB)}")
    return 0


def parse_floor_mb(path: Path) -> float:
    """Peak resident memory of a fresh interpreter that only parses ``path`` with LibCST."""
    import subprocess

    # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's peak on Linux.
    code = ("import gc, sys, libcst; gc.disable(); "
            "libcst.parse_module(open(sys.argv[1], 'rb').read().decode('utf-8', 'replace')); "
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False)
    try:
        return int(out.stdout.strip()) / 1024  # KiB
    except ValueError:
        return float("nan")  # not Linux


def _held(tracing: bool) -> int:
    """What is alive now (after a collection): bytes by tracemalloc when it runs, else the
    interpreter's count of allocated memory blocks (free of tracemalloc's slowdown)."""
    gc.collect()
    if tracing:
        return tracemalloc.get_traced_memory()[0]
    return sys.getallocatedblocks()


if __name__ == "__main__":
    sys.exit(main())
