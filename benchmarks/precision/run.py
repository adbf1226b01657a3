#!/usr/bin/env python
"""How many of torchcheck's findings on real code are worth a change?

Three steps, each rerunnable (see benchmarks/precision/README.md):

``checkout``  materialise each repository of ``manifest.toml`` at its commit from a local git
              directory (``--git-dirs``: a folder holding ``owner+name/repo`` git directories, or
              any clone; ``{owner}``/``{name}`` are filled in) into ``--data``;
``lint``      lint those checkouts with every rule (preview rules included) and write a triage
              sheet: every finding with its repository's half (tune or check, the fixed split of
              benchmarks/realbugs_mined/split.py) and kind, and a fixed sample of them per rule and
              half (every k-th finding in path order, k chosen so that at most ``--per-rule`` are
              sampled in each half) with the code
              around it and an empty ``verdict`` column; verdicts of an earlier sheet
              (``--verdicts``) are carried over to the same finding (same rule, repository, path and line);
``summary``   count a triaged sheet per rule and half: findings, sampled, worth a change, precision,
              findings per 1,000 lines; print it as a Markdown table, then the default-on and
              preview-only totals of each half and of both. ``verdicts.csv`` (committed)
              keeps the verdicts without the code: ``--save-verdicts`` writes it back.

Verdicts: ``yes`` (worth a change), ``no`` (false), ``debatable`` (counts against the rule).
No code of the linted repositories is committed: only the manifest and the per-rule numbers.
"""

from __future__ import annotations

import argparse
import csv
import functools
import importlib.util
import json
import math
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VERDICTS = ("yes", "no", "debatable")
KINDS = ("library", "application")
HALVES = ("tune", "check")
FIELDS = ["id", "rule", "repo", "half", "kind", "path", "line", "column", "confidence", "message", "sampled", "verdict", "note",
          "context"]


def manifest(path: Path) -> list[dict]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    repos = data["repo"]
    for repo in repos:
        # The kind is what the headline numbers are balanced on: a missing one must not pass silently.
        if repo.get("kind") not in KINDS:
            sys.exit(f"{path}: repository {repo.get('name', '?')!r} has kind {repo.get('kind')!r}; "
                     f"allowed: {', '.join(KINDS)}")
    return repos


@functools.lru_cache(maxsize=None)
def half(name: str) -> str:
    """The repository's half, by the fixed salted hash of the mined benchmark (never a copy of it)."""
    spec = importlib.util.spec_from_file_location("realbugs_split", REPO / "benchmarks" / "realbugs_mined" / "split.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.half(name)


def checkout_dir(data: Path, name: str) -> Path:
    return data / name.replace("/", "+")


def cmd_checkout(args: argparse.Namespace) -> int:
    for repo in manifest(args.manifest):
        owner, name = repo["name"].split("/")
        git_dir = args.git_dirs.format(owner=owner, name=name)
        dest = checkout_dir(args.data, repo["name"])
        if dest.exists():
            print(f"{repo['name']}: {dest} exists, left as it is")
            continue
        dest.mkdir(parents=True)
        # Only Python files and the files that tell the linter the torch versions a project
        # supports: a snapshot may lack its large data files, and they are not linted.
        listed = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "-z",
                                 repo["commit"]], check=True, capture_output=True, text=True).stdout
        wanted = [f for f in listed.split("\0") if f and _wanted(f, repo["paths"])]
        archive = subprocess.run(["git", "--git-dir", git_dir, "archive", repo["commit"], "--", *wanted],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        print(f"{repo['name']}@{repo['commit'][:12]} -> {dest}")
    return 0


def _wanted(file: str, paths: list[str]) -> bool:
    base = file.rsplit("/", 1)[-1]
    if base in ("pyproject.toml", "setup.py") and "/" not in file:
        return True
    if base.startswith("requirements") and base.endswith(".txt"):
        return True
    return file.endswith(".py") and any(p == "." or file == p or file.startswith(p.rstrip("/") + "/")
                                        for p in paths)


def python_lines(root: Path, paths: list[str]) -> int:
    total = 0
    for p in paths:
        target = root / p
        files = [target] if target.is_file() else sorted(target.rglob("*.py"))
        for f in files:
            total += sum(1 for _ in f.open(encoding="utf-8", errors="replace"))
    return total


def lint(root: Path, paths: list[str]) -> list[dict]:
    """Every finding of every rule, preview included, with no configuration file read."""
    targets = [str(root / p) for p in paths]
    proc = subprocess.run(
        [sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache", "--preview",
         "--select", "ALL", "--ignore", "TRN002", "--format", "json", "--exit-zero", *targets],
        capture_output=True, text=True, cwd=REPO)
    if proc.returncode not in (0, 1):
        sys.exit(f"torchcheck failed on {root} (exit {proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout or "[]")


def context(path: Path, line: int, around: int = 3) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return "\n".join(f"{'>' if n == line else ' '}{n:5} {lines[n - 1]}" for n in range(lo, hi + 1))


def sample_positions(n: int, per_rule: int) -> set[int]:
    """Every k-th finding (0, k, 2k, ...), k = ceil(n / per_rule): fixed by position, never by look."""
    k = max(1, math.ceil(n / per_rule))
    return set(range(0, n, k))


def key(row: dict) -> tuple:
    return row["rule"], row["repo"], row["path"], str(row["line"])


def cmd_lint(args: argparse.Namespace) -> int:
    previous = {}
    if args.verdicts.exists():
        with args.verdicts.open(newline="", encoding="utf-8") as fh:
            previous = {key(r): r for r in csv.DictReader(fh)}
    rows: list[dict] = []
    lines: dict[str, int] = {}
    for repo in manifest(args.manifest):
        root = checkout_dir(args.data, repo["name"])
        if not root.exists():
            sys.exit(f"{root} is missing: run `checkout` first")
        lines[repo["name"]] = python_lines(root, repo["paths"])
        for f in lint(root, repo["paths"]):
            path = Path(f["path"])
            rows.append({"rule": f["code"], "repo": repo["name"], "half": half(repo["name"]), "kind": repo["kind"],
                         "path": str(path.resolve().relative_to(root.resolve())),
                         "line": f["line"], "column": f["column"], "confidence": f.get("confidence", "certain"),
                         "message": f["message"],
                         "context": context(path, f["line"])})
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["rule"], r["repo"], r["path"], int(r["line"]), int(r["column"]))):
        by_rule[r["rule"]].append(r)
    out = []
    for rule, found in sorted(by_rule.items()):
        picked: set[int] = set()
        # Each half gets its own sample, so the check half's numbers never lean on the tune half's.
        for h in HALVES:
            mine = [i for i, r in enumerate(found) if r["half"] == h]
            picked |= {mine[j] for j in sample_positions(len(mine), args.per_rule)}
            # A rule with certain and possible findings: its certain ones (reported by default) also get
            # a sample of their own, by the same rule, so that the default tier's precision is measured.
            certain = [i for i in mine if found[i]["confidence"] == "certain"]
            if 0 < len(certain) < len(mine):
                picked |= {certain[j] for j in sample_positions(len(certain), args.per_rule)}
        for i, r in enumerate(found):
            old = previous.get(key(r), {})
            r.update(id=f"{rule}-{i + 1:03}", sampled="x" if i in picked else "",
                     verdict=old.get("verdict", ""), note=old.get("note", ""))
            out.append(r)
    with args.sheet.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        w.writerows(out)
    args.sheet.with_suffix(".lines.json").write_text(json.dumps(lines, indent=2) + "\n", encoding="utf-8")
    print(f"{len(out)} findings in {sum(lines.values())} lines; sheet: {args.sheet}")
    return 0


def _precision(worth: int, sampled: int) -> str:
    return f"{worth} of {sampled} ({100 * worth / sampled:.0f}%)" if sampled else "-"


def save_verdicts(path: Path, triaged: list[dict]) -> None:
    """Add the triaged findings to the verdicts file, a record: its rows stay as they are (also those
    this sheet no longer samples) and the newly triaged ones are appended; only a verdict that changed
    makes the file be rewritten."""
    keep = ["id", "rule", "repo", "path", "line", "verdict", "note"]
    old: list[dict] = []
    if path.exists():
        with path.open(newline="", encoding="utf-8") as fh:
            old = list(csv.DictReader(fh))
    known = {key(r): r for r in old}
    changed = [r for r in triaged if key(r) in known
               and (known[key(r)]["verdict"], known[key(r)]["note"]) != (r["verdict"], r["note"])]
    added = list({key(r): r for r in triaged if key(r) not in known}.values())
    if changed:
        for r in changed:
            for o in old:
                if key(o) == key(r):
                    o.update(verdict=r["verdict"], note=r["note"])
        rows, mode = old + added, "w"
    else:
        rows, mode = added, "a"
    text = path.read_text(encoding="utf-8") if path.exists() and mode == "a" else ""
    with path.open(mode, newline="", encoding="utf-8") as fh:
        if mode == "a" and text and not text.endswith("\n"):
            fh.write("\n")
        w = csv.DictWriter(fh, keep, extrasaction="ignore", lineterminator="\n")
        if mode == "w" or not text:
            w.writeheader()
        w.writerows(rows)


def cmd_summary(args: argparse.Namespace) -> int:
    with args.sheet.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    lines = json.loads(args.sheet.with_suffix(".lines.json").read_text(encoding="utf-8"))
    repos = {r["name"]: r for r in manifest(args.manifest) if r["name"] in lines}
    for r in rows:  # a sheet written before halves were recorded gets them here, from the same hash
        r["half"] = r.get("half") or half(r["repo"])
    lines_of = {h: sum(n for name, n in lines.items() if half(name) == h) for h in HALVES}
    lines_of["both"] = sum(lines.values())
    untriaged = [r["id"] for r in rows if r["sampled"] and r["verdict"] not in VERDICTS]
    preview = set(args.preview or ())
    if args.tiers:
        sys.path.insert(0, str(REPO))
        from lint_rules import registry

        preview = {c for c in registry.PREVIEW_RULES if registry.hidden_by_default(c)}

    def by_default(row: dict) -> bool:
        """Reported by a plain `torchcheck lint`: a rule that runs by default, and a certain finding."""
        return row["rule"] not in preview and row.get("confidence", "certain") == "certain"

    def in_half(row: dict, h: str) -> bool:
        return h == "both" or row["half"] == h

    scopes = (*HALVES, "both")
    print(f"{len(rows)} findings in {lines_of['both']:,} lines of Python "
          f"({len(lines)} repositories); {sum(1 for r in rows if r['sampled'])} sampled.\n")
    for h in HALVES:
        count = Counter(repos[n]["kind"] for n in lines if half(n) == h and n in repos)
        kinds = ", ".join(f"{count[k]} {k}" for k in KINDS)
        found = sum(1 for r in rows if r["half"] == h)
        print(f"- {h} half: {sum(count.values())} repositories ({kinds}), {lines_of[h]:,} lines, "
              f"{found} findings ({1000 * found / max(1, lines_of[h]):.2f} per 1,000 lines), "
              f"{sum(1 for r in rows if r['half'] == h and r['sampled'])} sampled")
    print("\n| rule | tier | findings tune / check | tune: worth a change | check: worth a change "
          "| both: worth a change | per 1,000 lines |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for rule in sorted({r["rule"] for r in rows}):
        shown = [r for r in rows if r["rule"] == rule]
        tier = "preview" if rule in preview else "default" if all(map(by_default, shown)) else "core"
        found = " / ".join(str(sum(1 for r in shown if r["half"] == h)) for h in HALVES)
        cells = []
        for h in scopes:
            picked = [r for r in shown if r["sampled"] and in_half(r, h)]
            cells.append(_precision(sum(r["verdict"] == "yes" for r in picked), len(picked)))
        print(f"| {rule} | {tier} | {found} | {' | '.join(cells)} | {1000 * len(shown) / lines_of['both']:.3f} |")
    print()
    for tier, label in (("default", "default-on (a plain lint reports them)"),
                        ("preview", "preview-only (only --preview adds them)")):
        parts = []
        for h in scopes:
            picked = [r for r in rows if r["sampled"] and in_half(r, h) and by_default(r) == (tier == "default")]
            found = sum(1 for r in rows if in_half(r, h) and by_default(r) == (tier == "default"))
            parts.append(f"{h}: {_precision(sum(r['verdict'] == 'yes' for r in picked), len(picked))} worth a change, "
                         f"{found} findings ({1000 * found / max(1, lines_of[h]):.3f} per 1,000 lines)")
        print(f"{label}: " + "; ".join(parts))
    if args.save_verdicts:
        save_verdicts(args.save_verdicts, [r for r in rows if r["sampled"] and r["verdict"]])
    if untriaged:
        print(f"\nnot yet triaged: {', '.join(untriaged)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--manifest", type=Path, default=HERE / "manifest.toml")
    p.add_argument("--data", type=Path, default=Path("/work/precision-data"),
                   help="where the checkouts live (outside this repository)")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("checkout", help="materialise every repository at its commit")
    c.add_argument("--git-dirs", default="/work/.mirror/{owner}+{name}/repo",
                   help="git directory of each repository; {owner} and {name} are filled in")
    c.set_defaults(run=cmd_checkout)
    lt = sub.add_parser("lint", help="lint the checkouts and write the triage sheet")
    lt.add_argument("--sheet", type=Path, default=Path("/work/precision-data/sheet.csv"))
    lt.add_argument("--verdicts", type=Path, default=HERE / "verdicts.csv",
                    help="carry verdicts over from this sheet (same rule, repository, path and line)")
    lt.add_argument("--per-rule", type=int, default=10, help="at most this many sampled findings per rule")
    lt.set_defaults(run=cmd_lint)
    s = sub.add_parser("summary", help="per-rule numbers of a triaged sheet, as Markdown")
    s.add_argument("--sheet", type=Path, default=Path("/work/precision-data/sheet.csv"))
    s.add_argument("--preview", nargs="*", help="codes to count as preview (default: the registry's)")
    s.add_argument("--tiers", action="store_true", help="read the tiers from the registry")
    s.add_argument("--save-verdicts", type=Path, help="write the sampled findings' verdicts here")
    s.set_defaults(run=cmd_summary)
    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
