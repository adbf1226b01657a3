"""Run every program of the watch corpus (manifest.toml) in ONE process, each as ``torchcheck run`` would,
and write what happened as JSON.

    python tests/plugin/watch_corpus/driver.py OUT.json [--plain] [--only ID ...]
    python tests/plugin/watch_corpus/driver.py OUT.json [--plain] [--all-checks] --scripts PATH ...

Starting a Python process costs about 3 s of ``import torch`` on a busy machine; one process for the
whole corpus pays it once. Each program runs through :func:`pytest_torchcheck.watch.program.run` under a
fresh :class:`~pytest_torchcheck.watch.watcher.Watcher` (``--plain``: no watch, to check the programs
themselves), from its own folder, with the corpus's own modules dropped from ``sys.modules`` before and
after: a buggy and a fixed ``utils.py`` must never stand in for each other. Its standard output and
error are captured, so one program's noise cannot hide another's result.

``--scripts``: the given scripts instead of the corpus (id ``script/<file name>``; the reference
fixtures' tests use it), ``--all-checks``: every check, the opt-in ones too (``--select ALL``). Otherwise
a pair runs the checks its manifest ``select`` names, or the default ones.

Per program: ``id`` (``<case>/buggy``, ``<case>/fixed`` or ``clean/<name>``), ``exit_code``,
``findings`` (code, path relative to the program's folder, line), ``errors`` (the watcher's: a check
that raised), ``seconds`` and the tail of its ``output``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
import tomllib
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
OUTPUT_TAIL = 4000


def programs(manifest: dict) -> list[dict]:
    """Every single-process program: each pair's buggy and fixed twin, then the clean scripts, in manifest
    order (``ranks = 2`` entries run under torchrun, one process per rank: not here). A pair's ``select``
    (the checks ``--select`` would name; default: the default ones) goes with both twins: a pair of an
    opt-in check needs it to be watched by that check at all."""
    found = []
    for case in manifest["pair"]:
        if case.get("ranks", 1) > 1:  # run by the test under torchrun, one process per rank
            continue
        for variant in ("buggy", "fixed"):
            found.append({"id": f"{case['id']}/{variant}", "folder": CORPUS / "pairs" / case["id"] / variant,
                          "main": case["main"], "args": case.get("args", []), "select": case.get("select")})
    for script in manifest.get("clean", []):
        if script.get("ranks", 1) > 1:
            continue
        found.append({"id": f"clean/{script['id']}", "folder": CORPUS / "clean",
                      "main": script["main"], "args": script.get("args", [])})
    return found


def _forget_corpus_modules() -> None:
    """Drop the modules imported from the corpus's folders (a pair's helpers), never anyone else's."""
    root = str(CORPUS) + os.sep
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name != "__main__" and path and os.path.abspath(path).startswith(root):
            del sys.modules[name]


def _relative(path: str, folder: Path, cwd: str) -> str:
    """A finding's path relative to the program's folder (the watch may name it from either directory)."""
    candidates = [path] if os.path.isabs(path) else [os.path.join(cwd, path), os.path.join(folder, path)]
    for candidate in candidates:
        if os.path.exists(candidate):
            return os.path.relpath(candidate, folder)
    return path


def run_one(entry: dict, plain: bool, every_check: bool = False) -> dict:
    from pytest_torchcheck.watch import program
    from pytest_torchcheck.watch.watcher import Watcher, codes, select_checks

    folder: Path = entry["folder"]
    chosen = None
    if every_check:
        chosen = codes()
    elif entry.get("select"):  # validated as --select is: a misspelt code fails here instead of selecting nothing
        chosen, _ = select_checks(entry["select"], [], f"the manifest's select of {entry['id']}", "")
    watcher = None if plain else Watcher(chosen)

    def within(body) -> None:
        with watcher:
            body()

    saved_cwd = os.getcwd()
    output = io.StringIO()
    _forget_corpus_modules()
    # a module already loaded under the name of one of the program's files would stand in for it
    shadowed = {p.stem: sys.modules.pop(p.stem) for p in folder.glob("*.py") if p.stem in sys.modules}
    started = time.perf_counter()
    try:
        os.chdir(folder)
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            outcome = program.run(entry["main"], None, entry["args"], None if plain else within)
    finally:
        os.chdir(saved_cwd)
        _forget_corpus_modules()
        sys.modules.update(shadowed)
    seconds = time.perf_counter() - started
    findings = [] if watcher is None else [
        {"code": f.code, "path": _relative(f.path, folder, saved_cwd), "line": f.line, "message": f.message}
        for f in watcher.findings]
    return {"id": entry["id"], "exit_code": outcome.code, "findings": findings,
            "errors": [] if watcher is None else watcher.errors, "seconds": round(seconds, 3),
            "output": output.getvalue()[-OUTPUT_TAIL:]}


def main(argv: list[str]) -> int:
    out, rest = argv[0], argv[1:]
    plain = "--plain" in rest
    every_check = "--all-checks" in rest
    only = set(rest[rest.index("--only") + 1:]) if "--only" in rest else None
    scripts = [Path(p).resolve() for p in rest[rest.index("--scripts") + 1:]] if "--scripts" in rest else None
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    import torch  # noqa: F401  (timed apart from the programs)

    torch.set_num_threads(1)
    imported = time.perf_counter() - started
    if scripts is not None:
        entries = [{"id": f"script/{p.name}", "folder": p.parent, "main": p.name, "args": []} for p in scripts]
    else:
        manifest = tomllib.loads((CORPUS / "manifest.toml").read_text(encoding="utf-8"))
        entries = [e for e in programs(manifest)
                   if only is None or e["id"].split("/")[0] in only or e["id"] in only]
    results = [run_one(entry, plain, every_check) for entry in entries]
    Path(out).write_text(json.dumps({"import_seconds": round(imported, 3), "programs": results,
                                     "seconds": round(time.perf_counter() - started, 3)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
