"""Linter speed in everyday workflows (issue #7), measured side by side in one run.

* warm re-run: ``torchcheck lint`` over a corpus whose results are all cached,
  against a cold run (empty cache). Target: at least 20x faster.
* parallelism: cold ``-j 2`` against cold ``-j 1`` (no cache). Target: at least
  1.6x faster on a 2-core machine.
* one changed file in a warm corpus, against linting that file alone (no cache).
  Target: no more than 50 ms extra.

Each measurement is a subprocess, as a user runs it; rounds are interleaved and
the median is reported. Exits 0 whatever the result: it is a benchmark.

Python's bytecode cache is on in the measured runs, as on a user's machine: if
``PYTHONDONTWRITEBYTECODE`` is set (some CI images and sandboxes set it), it is
removed from the children's environment, so the warm-up run writes the ``.pyc``
files of an editable install and later runs do not compile every module again.
``--keep-env`` measures with the environment as it is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import stat, table, verdict  # a sibling module: benchmarks/ is on sys.path when run as a script


def corpus_default() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed: pass a directory to lint")
    return Path(list(spec.submodule_search_locations)[0]) / "nn"


ENV = dict(os.environ)


def run(args: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--exit-zero", "--isolated", "-q", *args],
                   cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=ENV)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", type=Path, help="directory to lint (default: torch/nn of installed torch)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--keep-env", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE if set (default: bytecode cache on, as for users)")
    args = ap.parse_args(argv)
    if not args.keep_env:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    src = args.corpus or corpus_default()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "corpus"
        shutil.copytree(src, work, ignore=shutil.ignore_patterns("__pycache__"))
        files = sorted(work.rglob("*.py"))
        target = max(files, key=lambda p: p.stat().st_size)  # the file we "edit"
        cache = Path(tmp) / "cache"
        samples: dict[str, list[float]] = {k: [] for k in ("cold", "warm", "j1", "j2", "changed", "alone")}
        run(["--cache-dir", str(cache), "."], work)  # warm-up: imports, OS file cache
        for i in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            samples["cold"].append(run(["--cache-dir", str(cache), "."], work))
            samples["warm"].append(run(["--cache-dir", str(cache), "."], work))
            order = ["j1", "j2"] if i % 2 == 0 else ["j2", "j1"]
            for k in order:
                samples[k].append(run(["--no-cache", "-j", k[1], "."], work))
            with target.open("a") as fh:
                fh.write(f"\n# edit {i}\n")
            samples["changed"].append(run(["--cache-dir", str(cache), "."], work))
            samples["alone"].append(run(["--no-cache", str(target.relative_to(work))], work))
    st = {k: stat(v) for k, v in samples.items()}
    med = {k: s["median"] for k, s in st.items()}
    warm_ratio = med["cold"] / med["warm"]
    j_ratio = med["j1"] / med["j2"]
    extra_ms = 1000 * (med["changed"] - med["alone"])
    print(f"corpus: {src} ({len(files)} files); {os.cpu_count()} CPUs; median of {args.repeat} interleaved rounds; "
          f"bytecode cache {'off' if ENV.get('PYTHONDONTWRITEBYTECODE') else 'on'}")
    rows = [["run", "median s", "min-max s"]]
    labels = {"cold": "cold (empty cache)", "warm": "warm (everything cached)", "j1": "cold -j 1 --no-cache",
              "j2": "cold -j 2 --no-cache", "changed": f"warm, {target.name} edited", "alone": f"{target.name} alone"}
    for k, label in labels.items():
        rows.append([label, f"{med[k]:.3f}", f"{st[k]['min']:.3f}-{st[k]['max']:.3f}"])
    print(table(rows, {1, 2}))
    print(f"warm re-run: {warm_ratio:.1f}x faster than cold (target >= 20x) -> {verdict(warm_ratio >= 20)}")
    print(f"-j 2 vs -j 1: {j_ratio:.2f}x (target >= 1.6x) -> {verdict(j_ratio >= 1.6)}")
    print(f"one changed file in a warm corpus: {extra_ms:+.0f} ms over linting it alone (target <= 50 ms) -> "
          f"{verdict(extra_ms <= 50)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
