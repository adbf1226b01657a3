"""A long fuzzing campaign that keeps going after a failure and reports counts by kind.

    python -m tests.lint.fuzzing.campaign --mutants 5000 --programs 2000 --out failures.json

The pytest fuzz tests stop at their first failure (and Hypothesis shrinks it); this runs the
same properties over many more inputs and writes every failing input, with what failed, so
that a night's run can be triaged in one go. The report is rewritten every 100 inputs, so a
campaign stopped early (Ctrl-C, a CI time limit) still leaves its counts.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from hypothesis import HealthCheck, Phase, given, settings

from tests.lint.fuzzing.mutate import mutate
from tests.lint.fuzzing.programs import host, sources, torch_programs
from tests.lint.fuzzing.properties import CODES, Hang, PropertyFailed, check_fixes


class Campaign:
    def __init__(self, out: str) -> None:
        self.out = out
        self.tried = collections.Counter()  # "mutants" / "programs" -> inputs checked
        self.kinds: collections.Counter = collections.Counter()
        self.failures: list[dict] = []
        self.started = time.monotonic()

    def check(self, what: str, source: str, origin: str) -> None:
        self.tried[what] += 1
        try:
            check_fixes(source)
        except (PropertyFailed, Hang, Exception) as e:  # every failure is a finding here
            kind = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            self.kinds[kind] += 1
            if self.kinds[kind] <= 3:  # a few inputs per kind are enough to reproduce it
                self.failures.append({"kind": kind, "origin": origin, "source": source})
        if sum(self.tried.values()) % 100 == 0:
            self.write()

    def summary(self) -> dict:
        return {**self.tried, "seconds": round(time.monotonic() - self.started, 1),
                "failures_by_kind": dict(self.kinds.most_common())}

    def write(self) -> None:
        with open(self.out, "w", encoding="utf-8") as fh:
            json.dump({"summary": self.summary(), "failures": self.failures}, fh, indent=2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", type=int, default=1000, help="mutants of the bundled sources to check")
    parser.add_argument("--programs", type=int, default=500, help="hypothesmith programs to check")
    parser.add_argument("--seed", type=int, default=0, help="first mutation seed")
    parser.add_argument("--steps", type=int, default=None, help="mutations per mutant (default: 1 to 4, drawn)")
    parser.add_argument("--out", default="fuzz-failures.json", help="where to write the failing inputs")
    args = parser.parse_args(argv)

    campaign = Campaign(args.out)
    try:
        texts = sources()
        for seed in range(args.seed, args.seed + args.mutants):
            name, text = host(seed)
            mutant = mutate(text, seed, texts, steps=args.steps, codes=sorted(CODES))
            campaign.check("mutants", mutant.source, f"mutant of {name}, {mutant.describe()}")
        if args.programs:
            @settings(max_examples=args.programs, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            @given(torch_programs())
            def run(source: str) -> None:
                campaign.check("programs", source, "hypothesmith program")

            run()
    except KeyboardInterrupt:
        pass
    campaign.write()
    json.dump(campaign.summary(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 1 if campaign.kinds else 0


if __name__ == "__main__":
    sys.exit(main())
