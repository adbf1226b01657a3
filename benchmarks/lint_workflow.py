"""Linter speed in everyday workflows (issue #7), measured side by side in one run.

* warm re-run: ``torchcheck lint`` over a corpus whose results are all cached,
  against a cold run (empty cache). Target: at least 20x faster.
* parallelism: cold ``-j 2`` against cold ``-j 1`` (no cache). Target: at least
  1.6x faster on a 2-core machine.
* one changed file in a warm corpus, against linting that file alone (no cache).
  Target: no more than 50 ms extra.
* cross-file invalidation: a package of ``--dependents`` training scripts that
  import one ``model.py`` is added to the corpus; editing a comment in
  ``model.py`` must re-lint only ``model.py``, and changing the model's last
  activation must re-lint ``model.py`` and exactly its dependents (counted as
  the cache entries the run rewrote). Both runs are timed, as is the warm run of
  the unchanged tree with the package in it (no slower than without it).

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


MODEL = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 1), nn.{last}())

    def forward(self, x):
        return self.body(x)
"""
SCRIPT = """\
import torch
from torch import nn

from .model import Net


def train_{k}(loader):
    net = Net()
    criterion = nn.BCELoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        criterion(net(x), y).backward()
        opt.step()
"""


def add_package(work: Path, dependents: int) -> Path:
    pkg = work / "crossfile_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(MODEL.format(last="Sigmoid"))
    for k in range(dependents):
        (pkg / f"train_{k}.py").write_text(SCRIPT.format(k=k))
    return pkg / "model.py"


def rewritten(cache: Path, since: float) -> int:
    """Result entries the last run wrote (summaries apart)."""
    return sum(1 for p in cache.rglob("*.json") if "summaries" not in p.parts and p.stat().st_mtime >= since)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", type=Path, help="directory to lint (default: torch/nn of installed torch)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--dependents", type=int, default=20, help="scripts importing the edited model.py (default 20)")
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
        # Cross-file invalidation, on a fresh copy with the package added.
        shutil.rmtree(work)
        shutil.copytree(src, work, ignore=shutil.ignore_patterns("__pycache__"))
        model = add_package(work, args.dependents)
        cache2 = Path(tmp) / "cache2"
        counts: dict[str, list[int]] = {"comment": [], "activation": []}
        for k in ("warm_pkg", "comment", "activation"):
            samples[k] = []
        run(["--cache-dir", str(cache2), "."], work)
        for i in range(args.repeat):
            samples["warm_pkg"].append(run(["--cache-dir", str(cache2), "."], work))
            time.sleep(0.01)
            model.write_text(f"# edit {i}\n" + model.read_text())
            since = model.stat().st_mtime  # the file system's clock, which lags time.time() by up to a tick
            samples["comment"].append(run(["--cache-dir", str(cache2), "."], work))
            counts["comment"].append(rewritten(cache2, since))
            time.sleep(0.01)
            last = "Identity" if "Sigmoid" in model.read_text() else "Sigmoid"
            model.write_text(f"# round {i}\n" + MODEL.format(last=last))  # new text: model.py is never a cache hit
            since = model.stat().st_mtime
            samples["activation"].append(run(["--cache-dir", str(cache2), "."], work))
            counts["activation"].append(rewritten(cache2, since))
    st = {k: stat(v) for k, v in samples.items()}
    med = {k: s["median"] for k, s in st.items()}
    warm_ratio = med["cold"] / med["warm"]
    j_ratio = med["j1"] / med["j2"]
    extra_ms = 1000 * (med["changed"] - med["alone"])
    print(f"corpus: {src} ({len(files)} files); {os.cpu_count()} CPUs; median of {args.repeat} interleaved rounds; "
          f"bytecode cache {'off' if ENV.get('PYTHONDONTWRITEBYTECODE') else 'on'}")
    rows = [["run", "median s", "min-max s"]]
    labels = {"cold": "cold (empty cache)", "warm": "warm (everything cached)", "j1": "cold -j 1 --no-cache",
              "j2": "cold -j 2 --no-cache", "changed": f"warm, {target.name} edited", "alone": f"{target.name} alone",
              "warm_pkg": f"warm, with {args.dependents} importers of model.py added",
              "comment": "comment edited in model.py", "activation": "model.py's last activation changed"}
    for k, label in labels.items():
        rows.append([label, f"{med[k]:.3f}", f"{st[k]['min']:.3f}-{st[k]['max']:.3f}"])
    print(table(rows, {1, 2}))
    print(f"warm re-run: {warm_ratio:.1f}x faster than cold (target >= 20x) -> {verdict(warm_ratio >= 20)}")
    print(f"-j 2 vs -j 1: {j_ratio:.2f}x (target >= 1.6x) -> {verdict(j_ratio >= 1.6)}")
    print(f"one changed file in a warm corpus: {extra_ms:+.0f} ms over linting it alone (target <= 50 ms) -> "
          f"{verdict(extra_ms <= 50)}")
    ok_comment = max(counts["comment"]) == 1
    ok_activation = set(counts["activation"]) == {args.dependents + 1}
    print(f"comment edited in model.py: {max(counts['comment'])} file(s) re-linted (target 1: model.py) -> "
          f"{verdict(ok_comment)}")
    print(f"last activation changed: {sorted(set(counts['activation']))} file(s) re-linted (target "
          f"{args.dependents + 1}: model.py and its {args.dependents} importers) -> {verdict(ok_activation)}")
    print(f"warm re-run with the importers added: {med['warm_pkg']:.3f} s against {med['warm']:.3f} s without "
          f"({len(files)} vs {len(files) + args.dependents + 2} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
