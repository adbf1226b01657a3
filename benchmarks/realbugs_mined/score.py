"""Score torchcheck on the mined real-bug benchmark, per rule and per half (tune / check).

Each case's file is linted inside its repository's whole tree at the parent commit and at the fix
commit (materialise.py), with ``lint_rules.api.lint_file`` as `torchcheck lint --isolated` lints
it: imports resolve to the project's other files on disk. Each file is linted twice, as a plain
`torchcheck lint` (the default tier: certain findings only, see the rules index's Confidence) and
as `torchcheck lint --preview --select ALL`; the default tier counts the cases whose rule runs by
default.

    caught         the file before the fix is reported with the expected code (anywhere in it)
    caught@fix     ... on a line within WINDOW lines of a range the fix changed
    clean@fix      the file after the fix is not reported with the expected code within WINDOW
                   lines of a range the fix changed (the bug's place is quiet once fixed)
    clean          the file after the fix is not reported with the expected code at all

Tune only on the tune half. The check half is run for its numbers: its cases are never printed
unless --show-check is given.

    python benchmarks/realbugs_mined/score.py --root /work/realbugs-mined-data [--half tune] [--json out.json]

Exit status: 0 when something was scored (a benchmark, not a test); 2 when nothing could be
(bad arguments, a malformed manifest, no case materialised).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import MANIFEST, MinedCase, load  # noqa: E402
from realbugs_manifest import ManifestError  # noqa: E402

WINDOW = 15


@dataclass
class Outcome:
    id: str
    repository: str
    half: str
    expected: str
    preview_rule: bool  # the expected rule does not run by default
    caught: bool
    caught_at_fix: bool
    clean_at_fix: bool
    clean: bool
    error: str = ""
    # the four outcomes above as a plain `torchcheck lint` has them (None: its rule does not run by default)
    default: dict | None = None


def _settings(preview: bool):
    from lint_rules import api

    if preview:
        return api.Settings.resolve(isolated=True, select=["ALL"], ignore=["TRN002"], preview=True)
    return api.Settings.resolve(isolated=True, preview=False)


def _lines(path: Path, settings, code: str) -> list[int] | str:
    """Lines of ``path`` reported with ``code``; a string saying why when the file cannot be linted."""
    from lint_rules import api

    result = api.lint_file(path, settings, shown=str(path))
    if getattr(result, "error", None):
        return str(result.error)
    return [f.line for f in result.findings if f.code == code]


def _near(lines: list[int], ranges: list[tuple[int, int]]) -> bool:
    return any(start - WINDOW <= line <= start + max(length, 1) - 1 + WINDOW
               for line in lines for start, length in ranges)


def score(cases: list[MinedCase], root: Path) -> tuple[list[Outcome], list[str]]:
    from lint_rules import registry

    settings, plain = _settings(True), _settings(False)
    by_default = registry.default_codes()
    outcomes, missing = [], []
    for mc in cases:
        c = mc.case
        before = mc.tree(root, c.parent_commit) / c.path_before
        after = mc.tree(root, c.fix_commit) / c.path
        hunks_file = mc.hunks_file(root)
        if not (before.is_file() and after.is_file() and hunks_file.is_file()):
            missing.append(c.id)
            continue
        hunks = json.loads(hunks_file.read_text())
        got_before, got_after = _lines(before, settings, c.expected), _lines(after, settings, c.expected)
        error = next((g for g in (got_before, got_after) if isinstance(g, str)), "")
        if error:
            got_before = got_before if isinstance(got_before, list) else []
            got_after = got_after if isinstance(got_after, list) else []
        default = None
        if c.expected in by_default:
            plain_before, plain_after = _lines(before, plain, c.expected), _lines(after, plain, c.expected)
            default = _outcomes(plain_before if isinstance(plain_before, list) else [],
                                plain_after if isinstance(plain_after, list) else [], hunks)
        outcomes.append(Outcome(c.id, c.repository, mc.half, c.expected, c.expected not in by_default,
                                **_outcomes(got_before, got_after, hunks), error=error, default=default))
    return outcomes, missing


def _outcomes(got_before: list[int], got_after: list[int], hunks: list[dict]) -> dict:
    return {"caught": bool(got_before),
            "caught_at_fix": _near(got_before, [(h["before"], h["before_len"]) for h in hunks]),
            "clean_at_fix": not _near(got_after, [(h["after"], h["after_len"]) for h in hunks]),
            "clean": not got_after}


COLUMNS = ("caught", "caught_at_fix", "clean_at_fix", "clean")


def _ratio(outcomes: list, attr: str) -> str:
    return f"{sum(getattr(o, attr) for o in outcomes)}/{len(outcomes)}"


def _as_default(o: Outcome) -> Outcome:
    """``o`` with the plain run's outcomes."""
    return Outcome(o.id, o.repository, o.half, o.expected, o.preview_rule, **o.default, error=o.error)


def report(title: str, outcomes: list[Outcome], show_cases: bool, stream=sys.stdout) -> None:
    w = stream.write
    repos = len({o.repository for o in outcomes})
    w(f"\n{title}: {len(outcomes)} cases from {repos} repositories\n")
    if not outcomes:
        return
    for tier, chosen in (("default tier", [_as_default(o) for o in outcomes if o.default is not None]),
                         ("with --preview", outcomes)):
        w(f"  {tier}: {len(chosen)} cases whose rule runs\n")
        by_rule: dict[str, list[Outcome]] = defaultdict(list)
        for o in chosen:
            by_rule[o.expected].append(o)
        w(f"    {'rule':<8}" + "".join(f"{col:>15}" for col in COLUMNS) + "\n")
        for code in sorted(by_rule):
            w(f"    {code:<8}" + "".join(f"{_ratio(by_rule[code], col):>15}" for col in COLUMNS) + "\n")
        w(f"    {'TOTAL':<8}" + "".join(f"{_ratio(chosen, col):>15}" for col in COLUMNS) + "\n")
    errors = [o for o in outcomes if o.error]
    if errors:
        w(f"  {len(errors)} cases with a file the linter could not read (scored as not reported)\n")
    if not show_cases:
        return
    w("  cases (caught / caught@fix / clean@fix / clean):\n")
    for o in sorted(outcomes, key=lambda o: (o.expected, o.id)):
        marks = "".join("+" if getattr(o, col) else "." for col in COLUMNS)
        w(f"    {o.expected}  {marks}  {o.id}" + (f"  [{o.error[:60]}]" if o.error else "") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/work/realbugs-mined-data"),
                        help="folder written by materialise.py")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--half", choices=("tune", "check"), help="score one half only (default: both)")
    parser.add_argument("--show-check", action="store_true", help="also print the check half's cases (not for tuning)")
    parser.add_argument("--json", type=Path, help="write the outcomes (the check half's only with --show-check)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root}: not a directory; run materialise.py first")
    try:
        cases = load(args.manifest)
    except ManifestError as e:
        print(f"score.py: error: {e}", file=sys.stderr)
        return 2
    if args.half:
        cases = [c for c in cases if c.half == args.half]
    outcomes, missing = score(cases, args.root)
    if not outcomes:
        print(f"score.py: error: no case is materialised under {args.root}", file=sys.stderr)
        return 2
    for half in ("tune", "check"):
        if args.half in (None, half):
            report(f"{half} half", [o for o in outcomes if o.half == half], half == "tune" or args.show_check)
    if not args.half:
        report("both halves", outcomes, False)
    if missing:
        print(f"\n{len(missing)} cases not materialised (run materialise.py)")
    if args.json is not None:
        shown = [asdict(o) for o in outcomes if o.half == "tune" or args.show_check]
        args.json.write_text(json.dumps(shown, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
