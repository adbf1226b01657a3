"""A long fuzzing campaign that keeps going after a failure and reports counts by kind.

    python -m tests.lint.fuzzing.campaign --mutants 5000 --programs 2000 --out failures.json

The pytest fuzz tests stop at their first failure (and Hypothesis shrinks it); this runs the
same properties over many more inputs and writes every failing input, with what failed, so
that a night's run can be triaged in one go.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from hypothesis import HealthCheck, Phase, given, settings

from tests.lint.fuzzing.mutate import mutate
from tests.lint.fuzzing.programs import hosts, sources, torch_programs
from tests.lint.fuzzing.properties import CODES, Hang, PropertyFailed, check_fixes


def _kind(error: BaseException) -> str:
    text = str(error).split("\n", 1)[0]
    return f"{type(error).__name__}: {text[:160]}"


def _check(source: str, origin: str, failures: list[dict], kinds: collections.Counter) -> None:
    try:
        check_fixes(source)
    except (PropertyFailed, Hang, Exception) as e:  # noqa: BLE001 - every failure is a finding here
        kind = _kind(e)
        kinds[kind] += 1
        if kinds[kind] <= 3:  # a few inputs per kind are enough to reproduce it
            failures.append({"kind": kind, "origin": origin, "source": source})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", type=int, default=1000, help="mutants of the bundled sources to check")
    parser.add_argument("--programs", type=int, default=500, help="hypothesmith programs to check")
    parser.add_argument("--seed", type=int, default=0, help="first mutation seed")
    parser.add_argument("--out", default="fuzz-failures.json", help="where to write the failing inputs")
    args = parser.parse_args(argv)

    failures: list[dict] = []
    kinds: collections.Counter = collections.Counter()
    starts, texts = hosts(), sources()
    start = time.monotonic()
    for seed in range(args.seed, args.seed + args.mutants):
        name, text = starts[seed % len(starts)]
        mutant = mutate(text, seed, texts, codes=sorted(CODES))
        _check(mutant.source, f"mutant of {name}, {mutant.describe()}", failures, kinds)
    mutants_s = time.monotonic() - start

    programs = 0
    if not args.programs:
        return _report(args, mutants_s, programs, 0.0, failures, kinds)

    @settings(max_examples=args.programs, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(torch_programs())
    def run(source: str) -> None:
        nonlocal programs
        programs += 1
        _check(source, "hypothesmith program", failures, kinds)

    start = time.monotonic()
    run()
    return _report(args, mutants_s, programs, time.monotonic() - start, failures, kinds)


def _report(args: argparse.Namespace, mutants_s: float, programs: int, programs_s: float, failures: list[dict],
            kinds: collections.Counter) -> int:
    summary = {"mutants": args.mutants, "mutants_seconds": round(mutants_s, 1), "programs": programs,
               "programs_seconds": round(programs_s, 1), "failures_by_kind": dict(kinds.most_common())}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump({"summary": summary, "failures": failures}, fh, indent=2)
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
