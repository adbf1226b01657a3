#!/usr/bin/env python
"""What does loading torchcheck's pytest plugin cost a test suite that never touches torch?

Generates a throwaway suite of trivial tests (default 200 tests in 20 files, no
torch anywhere) and runs it, as subprocesses, side by side in one run:

- ``python -m pytest -q -p no:cacheprovider ...`` with the plugin loaded from
  its ``pytest11`` entry point, as for any user who installed the package;
- the same command with ``-p no:torchcheck`` added;
- the same command with ``-p no:torchcheck`` again, as an A/A control: the
  ratio of the two identical sides shows the noise floor of the measurement.

When Hypothesis is installed, two more sides measure what the ``plugin`` extra
used to bring (issue 24: it required Hypothesis, whose own pytest plugin,
``hypothesispytest``, imports Hypothesis at the end of every run):

- torchcheck and Hypothesis's pytest plugin loaded, every other plugin disabled;
- the same with ``HYPOTHESIS_NO_PLUGINS=1``: Hypothesis runs no entry point,
  so torchcheck's ``hypothesis`` entry point (its profile) is off; the ratio of
  the two is what that entry point costs.

Target (issue 3): the plugin-enabled run at most 1.05x the plugin-disabled run
(median wall-clock time). The same run also checks the ground rule that loading
the plugin imports no torch: the suite's conftest.py writes, at the end of the run (``pytest_unconfigure``),
whether ``torch`` is in ``sys.modules`` and whether the torchcheck plugin is
registered, into a file per run. Every other auto-loaded pytest plugin that is
installed (xdist, pytest-benchmark, hypothesis, ...) is disabled with ``-p no:``
on every side alike, so that torchcheck is the only difference.

Every side runs once as a warm-up (``.pyc`` files, the OS file cache), then
``--repeat`` times, interleaved, the order rotated from round to round; the
medians are reported. The script exits 0 whether or not the target is met (it
is a benchmark, not a test) and 2 only when a run failed or the suite did not
pass. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from _report import stat, table, verdict, write_json  # a sibling module: benchmarks/ is on sys.path when run as a script

TARGET = 1.05  # plugin-enabled time / plugin-disabled time, at most
PLUGIN = "torchcheck"  # the pytest11 entry-point name

CONFTEST = '''\
import json
import os
import sys


def pytest_unconfigure(config):  # after the terminal summary, where Hypothesis's plugin imports Hypothesis
    path = os.environ.get("TORCHCHECK_BENCH_REPORT")
    if not path:
        return
    pm = config.pluginmanager
    with open(path, "w") as f:
        json.dump({
            "torch_imported": "torch" in sys.modules,
            "hypothesis_imported": "hypothesis" in sys.modules,
            "torch_modules": sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")),
            "torchcheck_registered": pm.has_plugin("__PLUGIN__"),
            "torchcheck_module_imported": "pytest_torchcheck.plugin" in sys.modules,
            "plugins": sorted(name for name, _ in pm.list_name_plugin() if name and not name.startswith("_")),
        }, f)
'''.replace("__PLUGIN__", PLUGIN)


def make_suite(root: Path, files: int, per_file: int) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")  # this directory is the rootdir; the repo's config stays out
    (root / "conftest.py").write_text(CONFTEST)
    for i in range(files):
        body = [f'"""Generated: {per_file} trivial tests, no torch."""\n', "import math\n"]
        for j in range(per_file):
            body.append(f"\n\ndef test_{i:03d}_{j:03d}():\n    assert math.sqrt({j * j}) == {j}\n")
        (root / f"test_gen_{i:03d}.py").write_text("".join(body))


def other_plugins() -> list[str]:
    """Entry-point names of every installed pytest11 plugin but torchcheck."""
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return sorted(names - {PLUGIN})


@dataclass
class Proc:
    wall: float
    cpu: float
    rc: int
    stdout: str
    stderr: str
    report: dict | None


HYPOTHESIS_PLUGIN = "hypothesispytest"  # Hypothesis's pytest11 entry point


def timed_run(cmd: list[str], cwd: Path, env: dict, report: Path) -> Proc:
    if report.exists():
        report.unlink()
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = json.loads(report.read_text()) if report.exists() else None
    return Proc(wall, cpu, out.returncode, out.stdout, out.stderr, data)








def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20, help="test files in the generated suite (default 20)")
    ap.add_argument("--tests-per-file", type=int, default=10, help="tests per file (default 10)")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per side (default 15, at least 10 advised)")
    ap.add_argument("--no-control", action="store_true", help="skip the A/A control (a second disabled side)")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="generate the suite in DIR and keep it (default: a temporary directory, removed)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers to this JSON file")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress lines, only the report")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.files < 1 or args.tests_per_file < 1:
        ap.error("--repeat, --files and --tests-per-file must be at least 1")

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    try:
        importlib.metadata.version("pytest-torchcheck")
    except importlib.metadata.PackageNotFoundError:
        print("plugin_startup: error: pytest-torchcheck is not installed (pip install -e .)", file=sys.stderr)
        return 2
    if PLUGIN not in {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}:
        print(f"plugin_startup: error: no pytest11 entry point named {PLUGIN!r}", file=sys.stderr)
        return 2

    others = other_plugins()
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for name in others:
        base += ["-p", f"no:{name}"]
    sides = {"enabled": base, "disabled": base + ["-p", f"no:{PLUGIN}"]}
    if not args.no_control:
        sides["disabled_again"] = base + ["-p", f"no:{PLUGIN}"]
    side_env: dict[str, dict[str, str]] = {}
    if HYPOTHESIS_PLUGIN in others:
        with_hypothesis = base[:6] + [a for name in others if name != HYPOTHESIS_PLUGIN for a in ("-p", f"no:{name}")]
        sides["hypothesis"] = with_hypothesis
        sides["hypothesis_no_entry_points"] = with_hypothesis
        side_env["hypothesis_no_entry_points"] = {"HYPOTHESIS_NO_PLUGINS": "1"}
    n_tests = args.files * args.tests_per_file

    # The same environment for every side, without what would change which plugins load or how; and
    # with .pyc caching on, as for most users (the warm-up run writes the caches; a set
    # PYTHONDONTWRITEBYTECODE, whatever its value, would recompile the suite on every run).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS",
                                                           "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
                                                           "PYTHONDONTWRITEBYTECODE")}
    machine = {
        "platform": platform.platform(),
        "processor": platform.processor() or None,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pytest": importlib.metadata.version("pytest"),
        "torchcheck": importlib.metadata.version("pytest-torchcheck"),
        "other_pytest11_plugins_disabled": {n: next(
            (ep.dist.name + " " + ep.dist.version for ep in importlib.metadata.entry_points(group="pytest11")
             if ep.name == n), None) for n in others},
        "loadavg_1m_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }

    with tempfile.TemporaryDirectory(prefix="torchcheck-startup-") as tmp:
        root = args.keep.resolve() if args.keep else Path(tmp) / "suite"
        root.mkdir(parents=True, exist_ok=True)
        make_suite(root, args.files, args.tests_per_file)
        report = Path(tmp) / "session.json"
        env["TORCHCHECK_BENCH_REPORT"] = str(report)
        log(f"suite: {n_tests} tests in {args.files} files under {root}")
        log("command: " + " ".join(sides["enabled"][1:]) + "  [+ -p no:torchcheck]")

        samples = {s: {"wall": [], "cpu": []} for s in sides}
        seen: dict[str, list[dict]] = {s: [] for s in sides}

        def one(side: str, record: bool) -> None:
            p = timed_run(sides[side], root, {**env, **side_env.get(side, {})}, report)
            m = re.search(r"(\d+) passed", p.stdout)
            if p.rc != 0 or not m or int(m.group(1)) != n_tests or p.report is None:
                tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-15:])
                raise RuntimeError(f"side {side!r} exited {p.rc}, expected {n_tests} passed; output tail:\n{tail}")
            seen[side].append(p.report)
            if record:
                samples[side]["wall"].append(p.wall)
                samples[side]["cpu"].append(p.cpu)

        order = list(sides)
        try:
            for side in order:  # warm-up
                one(side, record=False)
            for i in range(args.repeat):
                k = i % len(order)
                this = order[k:] + order[:k]
                for side in this:
                    one(side, record=True)
                log(f"  round {i + 1}/{args.repeat}: " + "  ".join(
                    f"{s} {samples[s]['wall'][-1]:.3f}s" for s in order))
        except RuntimeError as e:
            print(f"plugin_startup: error: {e}", file=sys.stderr)
            return 2

    if hasattr(os, "getloadavg"):
        machine["loadavg_1m_after"] = os.getloadavg()[0]

    # ---- numbers
    st = {s: {"wall_s": stat(samples[s]["wall"]), "cpu_s": stat(samples[s]["cpu"])} for s in sides}
    en, di = st["enabled"], st["disabled"]
    ratio = en["wall_s"]["median"] / di["wall_s"]["median"]
    ratio_cpu = en["cpu_s"]["median"] / di["cpu_s"]["median"]
    paired = statistics.median(a / b for a, b in zip(samples["enabled"]["wall"], samples["disabled"]["wall"]))
    control = (st["disabled_again"]["wall_s"]["median"] / di["wall_s"]["median"]) if "disabled_again" in st else None
    torch_enabled = [r["torch_imported"] for r in seen["enabled"]]
    torch_any = {s: any(r["torch_imported"] for r in seen[s]) for s in sides}
    registered = {s: sorted({r["torchcheck_registered"] for r in seen[s]}) for s in sides}
    loaded_ok = all(registered[s] == [s not in ("disabled", "disabled_again")] for s in sides)
    hyp = None
    if "hypothesis" in st:
        hyp = {"hypothesis_over_disabled": st["hypothesis"]["wall_s"]["median"] / di["wall_s"]["median"],
               "hypothesis_over_enabled": st["hypothesis"]["wall_s"]["median"] / en["wall_s"]["median"],
               "entry_points_on_over_off": (st["hypothesis"]["wall_s"]["median"]
                                            / st["hypothesis_no_entry_points"]["wall_s"]["median"])}
    no_torch = not any(torch_any.values())
    result = {
        "machine": machine, "repeat": args.repeat, "warmup_runs": 1,
        "suite": {"files": args.files, "tests_per_file": args.tests_per_file, "tests": n_tests},
        "command": sides["enabled"][1:], "disabled_adds": ["-p", f"no:{PLUGIN}"],
        "statistic": "median of the timed runs; ratios are ratios of medians; paired: median of per-round ratios",
        "sides": st,
        "enabled_over_disabled_wall": ratio, "enabled_over_disabled_cpu": ratio_cpu,
        "enabled_over_disabled_paired": paired, "control_disabled_again_over_disabled": control,
        "hypothesis_plugin": hyp,
        "torch_imported": {"enabled_runs": torch_enabled, "any_by_side": torch_any},
        "torchcheck_registered": registered,
        "plugins_seen_enabled": seen["enabled"][-1]["plugins"],
        "targets": {"startup_overhead": {"value": ratio, "max": TARGET, "pass": ratio <= TARGET},
                    "torch_not_imported": {"value": not torch_any["enabled"], "pass": no_torch and loaded_ok}},
    }

    # ---- report
    print()
    print("torchcheck pytest plugin start-up overhead on a non-torch suite")
    print(f"machine: {machine['platform']}, {machine['cpus']} CPUs; Python {machine['python']}, "
          f"pytest {machine['pytest']}, pytest-torchcheck {machine['torchcheck']}")
    if machine.get("loadavg_1m_before") is not None:
        print(f"load average (1 min) before/after: {machine['loadavg_1m_before']:.2f} / "
              f"{machine['loadavg_1m_after']:.2f}  (other work on the machine adds noise)")
    print(f"suite: {n_tests} trivial tests in {args.files} files (no torch), generated in a temporary directory")
    print("command: python " + " ".join(sides["enabled"][1:]))
    print(f"  (every other installed pytest11 plugin disabled on every side: {', '.join(others) or 'none'}); "
          f"disabled side adds -p no:{PLUGIN}")
    print(f"timing: 1 warm-up, then median of {args.repeat} interleaved runs [min-max], wall-clock seconds; "
          "CPU = user + sys of the child")
    print()
    labels = {"enabled": "torchcheck loaded (entry point)", "disabled": f"-p no:{PLUGIN}",
              "disabled_again": f"-p no:{PLUGIN} (A/A control)",
              "hypothesis": f"torchcheck + {HYPOTHESIS_PLUGIN}",
              "hypothesis_no_entry_points": f"torchcheck + {HYPOTHESIS_PLUGIN}, HYPOTHESIS_NO_PLUGINS=1"}
    rows = [["side", "wall s [min-max]", "x disabled", "CPU s", "torch imported", "torchcheck registered",
             "Hypothesis imported"]]
    for s in sides:
        w = st[s]["wall_s"]
        rows.append([labels[s], f"{w['median']:.3f} [{w['min']:.3f}-{w['max']:.3f}]",
                     f"{w['median'] / di['wall_s']['median']:.3f}x", f"{st[s]['cpu_s']['median']:.3f}",
                     "yes" if torch_any[s] else "no", "/".join("yes" if r else "no" for r in registered[s]),
                     "/".join(sorted({"yes" if r.get("hypothesis_imported") else "no" for r in seen[s]}))])
    print(table(rows, {1, 2, 3}))
    print(f"  overhead: {1e3 * (en['wall_s']['median'] - di['wall_s']['median']):+.1f} ms wall, "
          f"{1e3 * (en['cpu_s']['median'] - di['cpu_s']['median']):+.1f} ms CPU; CPU ratio {ratio_cpu:.3f}x, "
          f"paired per-round ratio {paired:.3f}x" + (f"; A/A control {control:.3f}x" if control else ""))
    if hyp is not None:
        print(f"  Hypothesis's pytest plugin: {hyp['hypothesis_over_disabled']:.3f}x disabled, "
              f"{hyp['hypothesis_over_enabled']:.3f}x torchcheck alone (what the plugin extra cost while it "
              f"required Hypothesis); Hypothesis's entry points on/off (torchcheck's profile): "
              f"{hyp['entry_points_on_over_off']:.3f}x")
    print(f"  target: enabled <= {TARGET}x disabled (wall):  {ratio:.3f}x  ->  {verdict(ratio <= TARGET)}")
    print(f"  check: torch not in sys.modules at session end with the plugin loaded "
          f"({len(torch_enabled)} runs, warm-up included), plugin registered only where enabled  ->  "
          f"{verdict(no_torch and loaded_ok)}")
    print()
    met = all(t["pass"] for t in result["targets"].values())
    print(f"summary: start-up {ratio:.3f}x (<= {TARGET}x) {verdict(ratio <= TARGET)}; torch not imported "
          f"{verdict(no_torch and loaded_ok)}" + (" -- all targets met" if met else " -- NOT all targets met"))

    if args.json:
        write_json(args.json, result, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
