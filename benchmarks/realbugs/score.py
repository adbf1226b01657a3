"""Score torchcheck on the real-bug benchmark: caught/total per rule, and after-clean.

A case is CAUGHT when the file before its fix is reported with the expected code, and AFTER-CLEAN
when the file after the fix is not. Files are linted the way `torchcheck lint --isolated` lints them
(`lint_rules.api.lint_file`, every rule including the preview tier, since this measures what the
rules can see; the project facts read from the file's folder), one case at a time.

    python benchmarks/realbugs/score.py --root /tmp/realbugs-data   # cases fetched by fetch_cases.py
    python benchmarks/realbugs/score.py --no-cases                  # only the reductions/ folder

The reductions/ folder (small shapes the linter misses today, in our own words) is scored the same
way, each before/ and after/ tree standing in for a project on disk.

Exit status: 0 when something was scored, whatever the numbers (a benchmark, not a test);
2 when nothing could be (bad arguments, a malformed manifest or reduction, no file found).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from realbugs_manifest import SHAPES, ManifestError, load_manifest, load_reductions  # noqa: E402


@dataclass
class Outcome:
    id: str
    expected: str
    shape: str
    bug: str
    caught: bool | None  # None: the before file is missing
    after_clean: bool | None
    before_codes: tuple[str, ...] = ()
    after_codes: tuple[str, ...] = ()


def codes_reported(path: Path) -> tuple[str, ...] | None:
    """The codes torchcheck reports for one file on disk (None when it is missing)."""
    from lint_rules import api

    if not path.is_file():
        return None
    result = api.lint_file(path, _settings(), shown=str(path))
    return tuple(sorted({f.code for f in result.findings}))


def _settings():
    """Every rule, the preview tier included (recall of what the rules can see), no configuration
    (as `--isolated`), the torch bound read from each file's folder."""
    global _SETTINGS
    if _SETTINGS is None:
        from lint_rules import api

        _SETTINGS = api.Settings.resolve(isolated=True, select=["ALL"], ignore=["TRN002"], preview=True)
    return _SETTINGS


_SETTINGS = None


def _judge(id_, expected, shape, bug, before: Path, after: Path) -> Outcome:
    got_before, got_after = codes_reported(before), codes_reported(after)
    return Outcome(id_, expected, shape, bug,
                   None if got_before is None else expected in got_before,
                   None if got_after is None else expected not in got_after,
                   got_before or (), got_after or ())


def score_cases(manifest: Path, root: Path) -> list[Outcome]:
    out = []
    for case in load_manifest(manifest):
        out.append(_judge(case.id, case.expected, case.shape, case.bug,
                          case.file(root, *case.before), case.file(root, *case.after)))
    return out


def score_reductions(folder: Path) -> list[Outcome]:
    return [_judge(r.name, r.expected, r.shape, r.case, r.before, r.after) for r in load_reductions(folder)]


def _ratio(outcomes: list[Outcome], attr: str) -> str:
    return f"{sum(bool(getattr(o, attr)) for o in outcomes)}/{len(outcomes)}"


def report(title: str, outcomes: list[Outcome], stream=sys.stdout) -> None:
    scored = [o for o in outcomes if o.caught is not None and o.after_clean is not None]
    missing = [o for o in outcomes if o not in scored]
    w = stream.write
    w(f"\n{title}: {len(scored)} scored" + (f", {len(missing)} not materialised" if missing else "") + "\n")
    if not scored:
        return
    by_rule: dict[str, list[Outcome]] = defaultdict(list)
    for o in scored:
        by_rule[o.expected].append(o)
    w(f"  {'rule':<8}{'caught':>8}{'after-clean':>13}\n")
    for code in sorted(by_rule):
        w(f"  {code:<8}{_ratio(by_rule[code], 'caught'):>8}{_ratio(by_rule[code], 'after_clean'):>13}\n")
    w(f"  {'TOTAL':<8}{_ratio(scored, 'caught'):>8}{_ratio(scored, 'after_clean'):>13}\n")
    by_shape = {s: [o for o in scored if o.shape == s] for s in SHAPES}
    w("  by shape: " + ", ".join(f"{s} {_ratio(v, 'caught')}" for s, v in by_shape.items() if v) + "\n")
    missed = [o for o in scored if not o.caught]
    if missed:
        w("  missed (before not reported with the expected code):\n")
        for o in missed:
            w(f"    {o.expected}  {o.shape:<12} {o.id}\n")
    noisy = [o for o in scored if not o.after_clean]
    if noisy:
        w("  still reported after the fix:\n")
        for o in noisy:
            w(f"    {o.expected}  {o.id}\n")
    for o in missing:
        w(f"  not materialised: {o.id}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="folder written by fetch_cases.py (<owner>+<repo>/<commit>/<path>)")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.toml")
    parser.add_argument("--reductions", type=Path, default=HERE / "reductions")
    parser.add_argument("--no-cases", action="store_true", help="score only the reductions")
    parser.add_argument("--no-reductions", action="store_true", help="score only the manifest's cases")
    parser.add_argument("--json", type=Path, help="also write every outcome to this JSON file")
    args = parser.parse_args(argv)
    if not args.no_cases and args.root is None:
        parser.error("--root is required (the folder fetch_cases.py wrote), unless --no-cases")
    if args.root is not None and not args.root.is_dir():
        parser.error(f"--root {args.root}: not a directory; run fetch_cases.py first")
    results: dict[str, list[Outcome]] = {}
    try:
        if not args.no_cases:
            results["cases"] = score_cases(args.manifest, args.root)
        if not args.no_reductions:
            results["reductions"] = score_reductions(args.reductions)
    except ManifestError as e:
        print(f"score.py: error: {e}", file=sys.stderr)
        return 2
    for title, outcomes in results.items():
        report(title, outcomes)
    if args.json is not None:
        args.json.write_text(json.dumps({k: [o.__dict__ for o in v] for k, v in results.items()}, indent=1))
    scored = sum(o.caught is not None for v in results.values() for o in v)
    if not scored:
        print("score.py: error: no file was found to score", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
