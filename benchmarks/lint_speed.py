#!/usr/bin/env python
"""How fast is torchcheck's linter, next to a bare LibCST parse and next to TorchFix?

Lints a real corpus -- by default the ``torch/nn`` sources that ship inside the
installed torch package, plus any directories named on the command line -- and
measures, side by side in one run:

(a) engine, in process: read + ``lint_rules.api.lint_text`` over read + ``libcst.parse_module``
    on the same files (target: at most 1.3x);
(b) command line, as subprocesses: ``torchfix --select ALL FILES...`` over
    ``python -m lint_rules lint --exit-zero --isolated --no-cache FILES...``
    (target: torchcheck at least 20x faster). Each tool runs from a clean virtual environment
    of its own, so that neither pays for start-up hooks of the other's environment.

TorchFix (pinned below) is installed into a throwaway virtual environment that
this script creates (default ``.bench/venv`` in the repository, which git
ignores) and reuses on later runs. torchcheck's command line runs from this
checkout with the interpreter of a second one, holding only LibCST at this
environment's version (default ``.bench/torchcheck-venv``; ``--this-python``
runs it with this script's interpreter instead).

Every measurement is warmed up once, then repeated ``--repeat`` times with the
contenders interleaved (and their order alternated from round to round) so that
machine noise hits every side alike; the medians are reported.  The script
exits 0 whether or not the targets are met (it is a benchmark, not a test) and
2 only when it could not measure at all.  See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.metadata
import io
import os
import platform
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from lint_rules.analysis.parsing import parse_module as engine_parse
from lint_rules.api import Settings, files_of, lint_text
from _report import stat, table, verdict, write_json  # a sibling module: benchmarks/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parent.parent
TORCHFIX_REQ = "torchfix==0.7.0"
TORCHFIX_VERSION = "0.7.0"
ENGINE_TARGET = 1.3  # lint time / bare parse time, at most (issue #12; was 1.5)
TORCHFIX_TARGET = 20.0  # TorchFix time / torchcheck time, at least (issue #12; was 10)
EVERY_RULE = Settings.resolve(isolated=True, select=["ALL"], preview=True)  # (a) times every rule


# ------------------------------------------------------------------ corpus
@dataclass
class FileSet:
    name: str
    root: Path
    files: list[Path]
    sources: list[tuple[str, str]] = field(default_factory=list)  # (path, text) of every file
    lines: int = 0
    torch_files: int = 0
    torch_lines: int = 0

    @property
    def skipped(self) -> int:
        return len(self.files) - self.torch_files


def decode(data: bytes) -> str:
    """Bytes to text the way a Python tool must (PEP 263 coding cookie, BOM)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def read(path: Path) -> str:
    return decode(path.read_bytes())


def load_set(name: str, root: Path) -> FileSet:
    # The same discovery as `torchcheck lint DIR` (recursive *.py, minus
    # __pycache__, virtual environments and the like), with no configured excludes.
    files = files_of([root], Settings.resolve(root, isolated=True, respect_gitignore=False))
    fs = FileSet(name, root, files)
    for f in files:
        text = read(f)
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        fs.sources.append((str(f), text))
        fs.lines += n
        if "torch" in text:  # what lint_source (and TorchFix) check before parsing
            fs.torch_files += 1
            fs.torch_lines += n
    return fs


# ---------------------------------------------------------- (a) in process
def time_parse(fs: FileSet, torch_only: bool, parse=cst.parse_module) -> tuple[float, float, int]:
    """Wall-clock and CPU seconds (this process) of reading and parsing the set, and parse errors."""
    gc.collect()
    errors = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    for f in fs.files:
        text = read(f)
        if torch_only and "torch" not in text:
            continue
        # Same GC policy as lint_source (cyclic GC paused while one file's tree is
        # built), so the ratio measures the engine's own work, not a GC setting.
        gc.disable()
        try:
            parse(text)
        except Exception:  # a file LibCST cannot parse still cost its attempt
            errors += 1
        finally:
            gc.enable()
    return time.perf_counter() - t0, time.process_time() - c0, errors


def time_lint(fs: FileSet) -> tuple[float, float, int]:
    gc.collect()
    findings = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    for f in fs.files:
        findings += len(lint_text(read(f), str(f), EVERY_RULE).findings)
    return time.perf_counter() - t0, time.process_time() - c0, findings


def run_inprocess(sets: list[FileSet], repeat: int, log) -> dict[str, dict[str, list[float]]]:
    """Samples per set: parse_all, parse_torch, lint; interleaved, order alternated."""
    kinds = {
        "parse_all": lambda fs: time_parse(fs, torch_only=False),
        "parse_torch": lambda fs: time_parse(fs, torch_only=True),
        "lint": time_lint,
        # The engine's own parse: LibCST's parser without its per-node validation (see
        # lint_rules/analysis/parsing.py); lint minus this is what the analysis costs.
        "parse_engine": lambda fs: time_parse(fs, torch_only=True, parse=engine_parse),
    }
    samples = {fs.name: {k: [] for k in [*kinds, *(k + "_cpu" for k in kinds)]} for fs in sets}
    extra = {fs.name: {} for fs in sets}
    for fs in sets:  # warm-up: imports, rule registry, OS file cache
        for k, fn in kinds.items():
            _, _, n = fn(fs)
            extra[fs.name][k] = n
    order = list(kinds)
    for i in range(repeat):
        this = order if i % 2 == 0 else order[::-1]
        for fs in sets:
            for k in this:
                dt, cpu, _ = kinds[k](fs)
                samples[fs.name][k].append(dt)
                samples[fs.name][k + "_cpu"].append(cpu)
        log(f"  (a) round {i + 1}/{repeat}: " + ", ".join(
            f"{fs.name}: parse {samples[fs.name]['parse_all'][-1]:.3f}s lint {samples[fs.name]['lint'][-1]:.3f}s"
            for fs in sets))
    for fs in sets:
        samples[fs.name]["_parse_errors"] = extra[fs.name]["parse_all"]
        samples[fs.name]["_findings"] = extra[fs.name]["lint"]
    return samples


# -------------------------------------------------------- (b) subprocesses
def venv_bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / (name + (".exe" if os.name == "nt" else ""))


def torchfix_version(venv: Path) -> str | None:
    exe = venv_bin(venv, "torchfix")
    if not exe.exists():
        return None
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def ensure_torchfix(venv: Path, log) -> Path:
    """TorchFix's executable in ``venv``, creating the venv and installing it if needed."""
    if torchfix_version(venv) == TORCHFIX_VERSION:
        log(f"TorchFix {TORCHFIX_VERSION}: reusing {venv}")
        return venv_bin(venv, "torchfix")
    if venv.exists():
        log(f"TorchFix: {venv} exists but has no working TorchFix {TORCHFIX_VERSION}; recreating it")
        shutil.rmtree(venv)
    log(f"TorchFix: creating {venv} and installing {TORCHFIX_REQ} ...")
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv_bin(venv, "python")), "-m", "pip", "install", "--disable-pip-version-check",
         "--quiet", TORCHFIX_REQ],
    ]
    for cmd in steps:
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"`{' '.join(cmd)}` failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    version = torchfix_version(venv)
    if version != TORCHFIX_VERSION:
        raise RuntimeError(f"installed TorchFix reports version {version!r}, expected {TORCHFIX_VERSION}")
    return venv_bin(venv, "torchfix")


def ensure_torchcheck_env(venv: Path, libcst_version: str, log) -> Path:
    """A clean virtual environment for torchcheck's command line, as TorchFix has its own: the
    interpreter that runs this script may load site-wide ``.pth`` hooks at every start-up (an
    editable install's import finder, a sandbox's certificate patch: 20 ms here) that TorchFix's
    fresh venv does not, and the comparison is of the tools, not of the environments. It holds
    LibCST at this environment's version (the linter's only dependency); torchcheck itself runs
    from this checkout (``python -m lint_rules`` in the repository root), so edits need no
    reinstall. Returns its interpreter."""
    python = venv_bin(venv, "python")
    if python.exists() and venv_package_version(venv, "libcst") == libcst_version:
        log(f"torchcheck: reusing {venv} (libcst {libcst_version})")
        return python
    if venv.exists():
        log(f"torchcheck: {venv} has no libcst {libcst_version}; recreating it")
        shutil.rmtree(venv)
    log(f"torchcheck: creating {venv} with libcst=={libcst_version} ...")
    venv.parent.mkdir(parents=True, exist_ok=True)
    for cmd in ([sys.executable, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                 f"libcst=={libcst_version}"]):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"`{' '.join(cmd)}` failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    return python


def startup_seconds(python: str, repeat: int = 10) -> float:
    """Median wall time of ``python -c pass``: what an interpreter's start-up costs in that environment."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", "pass"], env=_BYTECODE_ENV, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def venv_package_version(venv: Path, package: str) -> str | None:
    out = subprocess.run([str(venv_bin(venv, "python")), "-c",
                          f"import importlib.metadata as m; print(m.version({package!r}))"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


@dataclass
class Proc:
    wall: float
    cpu: float  # user + sys of the child and every descendant it waited for
    rc: int
    stdout: str
    stderr: str


# Both tools run from compiled bytecode, as after `pip install` (which compiles it): TorchFix's
# venv has it from its install; torchcheck's checkout gets it from the warm-up run, even where the
# environment sets PYTHONDONTWRITEBYTECODE (that alone would recompile ~60 modules per process).
_BYTECODE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed_run(cmd: list[str]) -> Proc:
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=_BYTECODE_ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Proc(wall, cpu, out.returncode, out.stdout, out.stderr)


def torchcheck_cmd(python: str, fs: FileSet) -> list[str]:
    # --no-cache: a cold run every time (TorchFix has no cache to compare with).
    return [python, "-m", "lint_rules", "lint", "--exit-zero", "--isolated", "--no-cache",
            *[str(f) for f in fs.files]]


def torchfix_cmd(exe: Path, fs: FileSet, jobs: int | None) -> list[str]:
    cmd = [str(exe), "--select", "ALL"]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    return cmd + [str(f) for f in fs.files]


def describe(tool: str, p: Proc) -> dict:
    """What a run says it did: files checked, findings, exit code."""
    if tool == "torchcheck":
        m = re.search(r"\((\d+) files? checked\)", p.stdout)
        findings = sum(1 for line in p.stdout.splitlines() if re.search(r":\d+:\d+: TRN\d", line))
    else:
        m = re.search(r"Finished checking (\d+) files?", p.stderr)
        findings = sum(1 for line in p.stdout.splitlines() if re.search(r":\d+:\d+: TOR\d", line))
    return {"rc": p.rc, "files_checked": int(m.group(1)) if m else None, "findings": findings}


def run_subprocesses(sets: list[FileSet], exe: Path, python: str, jobs: int | None, repeat: int, log) -> dict:
    tools = {
        "torchfix": lambda fs: torchfix_cmd(exe, fs, jobs),
        "torchcheck": lambda fs: torchcheck_cmd(python, fs),
    }
    samples = {fs.name: {t: {"wall": [], "cpu": []} for t in tools} for fs in sets}
    info = {fs.name: {} for fs in sets}
    for fs in sets:  # warm-up, and a record of what each tool reports doing
        for t, cmd in tools.items():
            p = timed_run(cmd(fs))
            info[fs.name][t] = describe(t, p)
            ok = p.rc == 0 if t == "torchcheck" else p.rc in (0, 1)
            if not ok or info[fs.name][t]["files_checked"] is None:
                log(f"  warning: {t} on {fs.name} exited {p.rc}; stderr tail:\n"
                    + "\n".join(p.stderr.strip().splitlines()[-10:]))
            elif t == "torchfix" and p.rc == 1:
                log(f"  note: TorchFix exited 1 on {fs.name} (it failed on some files)")
    order = list(tools)
    for i in range(repeat):
        this = order if i % 2 == 0 else order[::-1]
        for fs in sets:
            for t in this:
                p = timed_run(tools[t](fs))
                samples[fs.name][t]["wall"].append(p.wall)
                samples[fs.name][t]["cpu"].append(p.cpu)
        log(f"  (b) round {i + 1}/{repeat}: " + ", ".join(
            f"{fs.name}: torchfix {samples[fs.name]['torchfix']['wall'][-1]:.2f}s "
            f"torchcheck {samples[fs.name]['torchcheck']['wall'][-1]:.2f}s" for fs in sets))
    return {"samples": samples, "info": info}


# ----------------------------------------------------------------- report
def med(xs: list[float]) -> float:
    return statistics.median(xs)




def totals(per_set: list[list[float]]) -> list[float]:
    """Per-round sums across sets (the sets of one round ran back to back)."""
    return [sum(vals) for vals in zip(*per_set)]






def spread(s: dict, digits: int) -> str:
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def profile(sets: list[FileSet], top: int) -> str:
    """cProfile of lint_text over the corpus; the hot spots inside lint_rules/."""
    sources = [src for fs in sets for src in fs.sources]
    for path, text in sources:  # warm
        lint_text(text, path, EVERY_RULE)
    prof = cProfile.Profile()
    prof.enable()
    for path, text in sources:
        lint_text(text, path, EVERY_RULE)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("tottime").print_stats(r"lint_rules", top)
    st.sort_stats("cumulative").print_stats(r"lint_rules", top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", type=Path, metavar="DIR",
                    help="more directories to benchmark, each its own file set (after torch/nn)")
    ap.add_argument("--no-torch-nn", action="store_true",
                    help="leave out the default corpus, the installed torch/nn sources")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions per measurement (default 3)")
    ap.add_argument("--no-torchfix", action="store_true", help="skip (b), the TorchFix comparison")
    ap.add_argument("--torchfix-jobs", type=int, default=None, metavar="N",
                    help="pass --jobs N to TorchFix (default: TorchFix's own default, one per core)")
    ap.add_argument("--venv", type=Path, default=REPO / ".bench" / "venv",
                    help="virtual environment for TorchFix (default: .bench/venv; reused if present)")
    ap.add_argument("--torchcheck-venv", type=Path, default=REPO / ".bench" / "torchcheck-venv",
                    help="clean virtual environment with this environment's LibCST, whose interpreter runs "
                         "torchcheck's command line from this checkout (default: .bench/torchcheck-venv; "
                         "created if needed, reused if present)")
    ap.add_argument("--this-python", action="store_true",
                    help="run torchcheck's command line with the interpreter running this script instead, "
                         "site-wide start-up hooks and all")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers to this JSON file")
    ap.add_argument("--profile", action="store_true",
                    help="also print a cProfile of lint_text over the corpus (hot spots in lint_rules/)")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress lines, only the report")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    roots: list[tuple[str, Path]] = []
    if not args.no_torch_nn:
        import torch  # only here: the rest of the benchmark needs no torch

        roots.append(("torch/nn", Path(torch.__file__).parent / "nn"))
    for d in args.dirs:
        if not d.is_dir():
            print(f"lint_speed: error: {d} is not a directory", file=sys.stderr)
            return 2
        roots.append((d.as_posix(), d))
    if not roots:
        print("lint_speed: error: nothing to benchmark (--no-torch-nn and no DIR)", file=sys.stderr)
        return 2
    sets = [load_set(name, root) for name, root in roots]
    if not any(fs.files for fs in sets):
        print("lint_speed: error: the corpus has no *.py files", file=sys.stderr)
        return 2

    exe: Path | None = None
    torchfix_note = "skipped (--no-torchfix)"
    if not args.no_torchfix:
        try:
            exe = ensure_torchfix(args.venv, log)
        except (RuntimeError, OSError) as e:
            print(f"lint_speed: error: cannot set up TorchFix: {e}", file=sys.stderr)
            return 2
        python = sys.executable
        if not args.this_python:
            try:
                python = str(ensure_torchcheck_env(args.torchcheck_venv, importlib.metadata.version("libcst"), log))
            except (RuntimeError, OSError) as e:
                print(f"lint_speed: error: cannot set up torchcheck's environment (--this-python runs "
                      f"without one): {e}", file=sys.stderr)
                return 2

    machine = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "libcst": importlib.metadata.version("libcst"),
        "torchcheck": importlib.metadata.version("pytest-torchcheck"),
        "loadavg_1m_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    if not args.no_torch_nn:
        machine["torch"] = torch.__version__
    if exe is not None:
        machine["torchfix"] = TORCHFIX_VERSION
        machine["torchfix_libcst"] = venv_package_version(args.venv, "libcst")
        machine["torchfix_venv"] = str(args.venv)
        machine["torchcheck_python"] = python
        machine["startup_s"] = {"torchfix_env": startup_seconds(str(venv_bin(args.venv, "python"))),
                                "torchcheck_env": startup_seconds(python)}
        if python != sys.executable:
            machine["startup_s"]["this_python"] = startup_seconds(sys.executable)
        torchfix_note = (f"TorchFix {TORCHFIX_VERSION} (libcst {machine['torchfix_libcst']}), "
                         f"--select ALL, jobs: {args.torchfix_jobs or f'its default ({os.cpu_count()} = cores)'}")

    log(f"(a) engine in process: warm-up + {args.repeat} interleaved rounds ...")
    a = run_inprocess(sets, args.repeat, log)
    b = None
    if exe is not None:
        log(f"(b) command lines as subprocesses: warm-up + {args.repeat} interleaved rounds ...")
        b = run_subprocesses(sets, exe, python, args.torchfix_jobs, args.repeat, log)

    if hasattr(os, "getloadavg"):
        machine["loadavg_1m_after"] = os.getloadavg()[0]

    # ---- numbers
    result: dict = {"machine": machine, "repeat": args.repeat, "warmup_runs": 1,
                    "statistic": "median of the timed runs; ratios are ratios of medians",
                    "sets": [], "total": {}, "targets": {}}
    names = [fs.name for fs in sets]

    def a_block(parse_all, parse_torch, lint) -> dict:
        pa, pt, li = stat(parse_all), stat(parse_torch), stat(lint)
        return {"parse_all_s": pa, "parse_torch_files_only_s": pt, "lint_s": li,
                "lint_over_parse_all": li["median"] / pa["median"] if pa["median"] else None,
                "lint_over_parse_torch_files_only": li["median"] / pt["median"] if pt["median"] else None}

    def b_block(tf_wall, tc_wall, tf_cpu, tc_cpu) -> dict:
        w1, w2, c1, c2 = stat(tf_wall), stat(tc_wall), stat(tf_cpu), stat(tc_cpu)
        return {"torchfix_wall_s": w1, "torchcheck_wall_s": w2, "torchfix_cpu_s": c1, "torchcheck_cpu_s": c2,
                "speedup_wall": w1["median"] / w2["median"], "speedup_cpu": c1["median"] / c2["median"]}

    for fs in sets:
        s = a[fs.name]
        entry = {"name": fs.name, "root": str(fs.root), "files": len(fs.files), "lines": fs.lines,
                 "torch_files": fs.torch_files, "torch_lines": fs.torch_lines,
                 "skipped_no_torch": fs.skipped, "parse_errors": s["_parse_errors"],
                 "findings": s["_findings"],
                 "inprocess": a_block(s["parse_all"], s["parse_torch"], s["lint"])}
        if b is not None:
            sb = b["samples"][fs.name]
            entry["subprocess"] = b_block(sb["torchfix"]["wall"], sb["torchcheck"]["wall"],
                                          sb["torchfix"]["cpu"], sb["torchcheck"]["cpu"])
            entry["subprocess"]["torchfix_reported"] = b["info"][fs.name]["torchfix"]
            entry["subprocess"]["torchcheck_reported"] = b["info"][fs.name]["torchcheck"]
        result["sets"].append(entry)

    tot = {"files": sum(len(fs.files) for fs in sets), "lines": sum(fs.lines for fs in sets),
           "torch_files": sum(fs.torch_files for fs in sets), "torch_lines": sum(fs.torch_lines for fs in sets),
           "skipped_no_torch": sum(fs.skipped for fs in sets)}
    tot["inprocess"] = a_block(*(totals([a[n][k] for n in names]) for k in ("parse_all", "parse_torch", "lint")))
    # CPU time of this process: what the engine itself costs, less sensitive to other work on the machine.
    cpu = a_block(*(totals([a[n][k + "_cpu"] for n in names]) for k in ("parse_all", "parse_torch", "lint")))
    tot["parse_engine_s"] = med(totals([a[n]["parse_engine"] for n in names]))
    tot["inprocess_cpu"] = {"lint_over_parse_all": cpu["lint_over_parse_all"],
                            "lint_over_parse_torch_files_only": cpu["lint_over_parse_torch_files_only"]}
    if b is not None:
        S = b["samples"]
        tot["subprocess"] = b_block(totals([S[n]["torchfix"]["wall"] for n in names]),
                                    totals([S[n]["torchcheck"]["wall"] for n in names]),
                                    totals([S[n]["torchfix"]["cpu"] for n in names]),
                                    totals([S[n]["torchcheck"]["cpu"] for n in names]))
    result["total"] = tot
    eng = tot["inprocess"]["lint_over_parse_all"]
    result["targets"]["engine_over_bare_parse"] = {"value": eng, "max": ENGINE_TARGET, "pass": eng <= ENGINE_TARGET}
    if b is not None:
        sp = tot["subprocess"]["speedup_wall"]
        result["targets"]["torchfix_over_torchcheck"] = {"value": sp, "min": TORCHFIX_TARGET,
                                                         "pass": sp >= TORCHFIX_TARGET}

    # ---- report
    show_total = len(sets) > 1
    rows_of = [(e["name"], e) for e in result["sets"]] + ([("TOTAL", tot)] if show_total else [])
    print()
    print("torchcheck lint speed")
    print(f"machine: {machine['platform']}, {machine['cpus']} CPUs; Python {machine['python']}, "
          f"libcst {machine['libcst']}" + (f", torch {machine['torch']}" if "torch" in machine else ""))
    if machine.get("loadavg_1m_before") is not None:
        print(f"load average (1 min) before/after: {machine['loadavg_1m_before']:.2f} / "
              f"{machine['loadavg_1m_after']:.2f}  (other work on the machine adds noise)")
    print(f"timing: 1 warm-up, then median of {args.repeat} interleaved runs [min-max], wall-clock seconds")
    print()
    print("corpus")
    rows = [["set", "files", "lines", "mention torch", "skipped (no 'torch')", "root"]]
    for name, e in rows_of:
        rows.append([name, str(e["files"]), str(e["lines"]), f"{e['torch_files']} ({e['torch_lines']} lines)",
                     str(e["skipped_no_torch"]), e.get("root", "")])
    print(table(rows, {1, 2, 4}))
    print("  torchcheck (and TorchFix) skip files that never mention 'torch' before parsing;")
    print("  the bare-parse baseline parses ALL files. The stricter same-files ratio is shown too.")
    print()
    print("(a) engine, in process: read + api.lint_text()  vs  read + libcst.parse_module()")
    rows = [["set", "parse all (s)", "parse torch files (s)", "lint (s)", "lint/parse all", "lint/parse same files"]]
    for name, e in rows_of:
        ip = e["inprocess"]
        rows.append([name, spread(ip["parse_all_s"], 3), spread(ip["parse_torch_files_only_s"], 3),
                     spread(ip["lint_s"], 3), f"{ip['lint_over_parse_all']:.2f}x",
                     f"{ip['lint_over_parse_torch_files_only']:.2f}x"])
    print(table(rows, {1, 2, 3, 4, 5}))
    same = tot["inprocess"]["lint_over_parse_torch_files_only"]
    print(f"  target: lint <= {ENGINE_TARGET}x bare parse of all files:  {eng:.2f}x  ->  "
          f"{verdict(eng <= ENGINE_TARGET)}   (same files only: {same:.2f}x, "
          f"{verdict(same <= ENGINE_TARGET)} against the same bound)")
    cpu = tot["inprocess_cpu"]
    print(f"  CPU time of this process (less sensitive to other load): lint/parse all "
          f"{cpu['lint_over_parse_all']:.2f}x, same files {cpu['lint_over_parse_torch_files_only']:.2f}x")
    pe = tot["parse_engine_s"]
    print(f"  the engine parses without LibCST's per-node validation: {pe:.3f} s for the same files "
          f"({pe / tot['inprocess']['parse_torch_files_only_s']['median']:.2f}x the bare parse); "
          f"the analysis adds {tot['inprocess']['lint_s']['median'] - pe:.3f} s "
          f"({(tot['inprocess']['lint_s']['median'] - pe) / tot['inprocess']['parse_all_s']['median']:.2f}x the bare parse)")
    print()
    print("(b) command line, as subprocesses: torchfix --select ALL  vs  python -m lint_rules lint --exit-zero")
    if b is None:
        print(f"  {torchfix_note}")
    else:
        print(f"  {torchfix_note}; torchcheck: its default (-j = cores, one process below 16 files)")
        st = machine["startup_s"]
        where = ("this script's interpreter (--this-python)" if machine["torchcheck_python"] == sys.executable
                 else f"a clean venv with this LibCST ({machine['torchcheck_python']})")
        print(f"  interpreters: torchcheck from {where}, TorchFix from its venv; start-up "
              f"(python -c pass): torchcheck's {st['torchcheck_env'] * 1e3:.0f} ms, TorchFix's "
              f"{st['torchfix_env'] * 1e3:.0f} ms" + (f", this script's {st['this_python'] * 1e3:.0f} ms"
                                                     if "this_python" in st else ""))
        rows = [["set", "torchfix (s)", "torchcheck (s)", "speedup", "torchfix CPU (s)", "torchcheck CPU (s)",
                 "CPU speedup"]]
        for name, e in rows_of:
            sp_ = e["subprocess"]
            rows.append([name, spread(sp_["torchfix_wall_s"], 2), spread(sp_["torchcheck_wall_s"], 2),
                         f"{sp_['speedup_wall']:.1f}x", f"{sp_['torchfix_cpu_s']['median']:.2f}",
                         f"{sp_['torchcheck_cpu_s']['median']:.2f}", f"{sp_['speedup_cpu']:.1f}x"])
        print(table(rows, {1, 2, 3, 4, 5, 6}))
        for e in result["sets"]:
            r1, r2 = e["subprocess"]["torchfix_reported"], e["subprocess"]["torchcheck_reported"]
            print(f"  {e['name']}: torchfix checked {r1['files_checked']} files, {r1['findings']} findings "
                  f"(exit {r1['rc']}); torchcheck checked {r2['files_checked']} files, "
                  f"{r2['findings']} findings (exit {r2['rc']})")
        sp = tot["subprocess"]["speedup_wall"]
        print(f"  target: torchcheck >= {TORCHFIX_TARGET:.0f}x faster than TorchFix (wall):  {sp:.1f}x  ->  "
              f"{verdict(sp >= TORCHFIX_TARGET)}   (CPU time: {tot['subprocess']['speedup_cpu']:.1f}x)")
    print()
    met = all(t["pass"] for t in result["targets"].values())
    print("summary: " + "; ".join(
        [f"engine/parse {eng:.2f}x (<= {ENGINE_TARGET}x) {verdict(eng <= ENGINE_TARGET)}"]
        + ([f"TorchFix/torchcheck {tot['subprocess']['speedup_wall']:.1f}x (>= {TORCHFIX_TARGET:.0f}x) "
            f"{verdict(result['targets']['torchfix_over_torchcheck']['pass'])}"] if b is not None else
           ["TorchFix comparison skipped"]))
          + (" -- all targets met" if met else " -- NOT all targets met"))

    if args.profile:
        print()
        print("profile: cProfile of lint_text over the corpus (overall, then lint_rules/ only)")
        print(profile(sets, 25))

    if args.json:
        write_json(args.json, result, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
