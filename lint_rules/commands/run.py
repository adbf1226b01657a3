"""``torchcheck run [OPTIONS] SCRIPT|-m MODULE [ARGS...]``: run a training program as ``python`` would, with
the runtime checks of :mod:`pytest_torchcheck.watch` installed, and report what they saw in the
linter's formats.

The report goes to standard error (or ``--output-file``), so the program's own standard output stays
its own. Exit code: the program's when it failed (its findings so far are reported first), else 1 with
findings, else 0; 2 for a usage error, before anything ran. torch is imported only here, when the
program is about to run: the linter's commands never load it.

Under ``torchrun`` with several ranks (see :mod:`pytest_torchcheck.watch.ranks`), every rank runs the
program watched; the node's first rank reports for all of them, each finding naming its ranks, and its
exit code counts every rank's findings; the other ranks report nothing and exit with their program's
code.
"""

from __future__ import annotations

import sys

from lint_rules import registry
from lint_rules.commands.lint_run import EXIT_FINDINGS, EXIT_OK
from lint_rules.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Sequence


def split_command_line(tokens: Sequence[str], takes_value: set[str]) -> tuple[list[str], list[str]]:
    """``torchcheck run``'s own options (with SCRIPT or ``-m MODULE``), and the program's arguments.

    Everything after SCRIPT or ``-m MODULE`` belongs to the program, options included, as with
    ``python``: ``torchcheck run --format json train.py --epochs 2``. ``takes_value``: the options
    that take a value as the next token.
    """
    own: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            return own + tokens[i + 1:i + 2], list(tokens[i + 2:])
        if token == "-m" or (token.startswith("-m") and not token.startswith("--")):
            module = token[2:] or (tokens[i + 1] if i + 1 < len(tokens) else None)
            rest = i + (1 if token[2:] else 2)
            return own + (["-m", module] if module is not None else ["-m"]), list(tokens[rest:])
        if not token.startswith("-") or token == "-":
            return own + [token], list(tokens[i + 1:])
        own.append(token)
        if token in takes_value and i + 1 < len(tokens):
            own.append(tokens[i + 1])
            i += 1
        i += 1
    return own, []


def selected_codes(args: argparse.Namespace) -> list[str]:
    """The runtime checks to run: ``--select`` (default: all but the opt-in ones) less ``--ignore``, each code
    validated as the linter validates it."""
    from pytest_torchcheck.watch.watcher import codes, select_checks

    select = [c for group in args.select or [] for c in group]
    ignore = [c for group in args.ignore or [] for c in group]
    chosen, nothing = select_checks(select, ignore, "--select", "--ignore")
    if nothing:
        print(f"torchcheck: warning: --select {','.join(select)} selects no runtime check; the runtime checks "
              f"are {', '.join(codes())}", file=sys.stderr)
    return chosen


def run(args: argparse.Namespace) -> int:
    from pytest_torchcheck.watch import program

    if (args.script is None) == (args.module is None):
        raise UsageError("run needs a SCRIPT or -m MODULE to run (one of them), followed by its arguments")
    if args.max_steps is not None and args.max_steps < 1:
        raise UsageError(f"--max-steps must be at least 1, got {args.max_steps}")
    chosen = selected_codes(args)
    if args.script is not None:  # a module is looked up with the working directory on the path, at its run
        try:
            program.locate(args.script, None)
        except program.ProgramNotFound as e:
            raise UsageError(str(e)) from None
    from pytest_torchcheck.watch import ranks

    launch = ranks.launch()
    started = ranks.now()
    quiet_rank = launch is not None and not launch.reports  # its findings go to the reporting rank
    # before the program runs: a bad path is a usage error
    report_to = None if quiet_rank else _open_output(args.output_file)

    from pytest_torchcheck.watch.watcher import Watcher

    from pytest_torchcheck.watch.spawned import SpawnedRanks

    watcher = Watcher(chosen, max_steps=args.max_steps)
    spawned = SpawnedRanks(chosen)  # the ranks the program starts itself, each watched

    def within(body) -> None:
        with watcher:
            spawned.install(watcher.events)
            body()

    try:
        outcome = program.run(args.script, args.module, args.program, within)
    except program.ProgramNotFound as e:
        raise UsageError(str(e)) from None
    findings, errors, steps, watched = watcher.findings, watcher.errors, watcher.events.steps, []
    findings, errors, spawned_steps = _merge_spawned(spawned, findings, errors)
    if launch is not None:
        if quiet_rank:
            ranks.write(launch, findings, errors, steps)
            ranks.handed_over(launch)
            return outcome.code
        findings, errors, watched = _merge_ranks(launch, started, findings, errors)
    for error in errors:
        print(f"torchcheck: warning: a runtime check failed and was skipped: {error}", file=sys.stderr)
    note = watcher.compiled.note(watcher.checks)
    if note is not None:
        print(note, file=sys.stderr)
    if outcome.stopped:
        print(f"torchcheck: stopped the program after {args.max_steps} optimizer "
              f"{'step' if args.max_steps == 1 else 'steps'} (--max-steps)",
              file=sys.stderr)
    counted = f"{steps} optimizer {'step' if steps == 1 else 'steps'}"
    where = f"ranks {', '.join(map(str, watched))} watched; {counted} on rank {launch.rank}" \
        if launch is not None else f"{counted} watched"
    if spawned_steps:
        where += (f"; spawned {'rank' if len(spawned_steps) == 1 else 'ranks'} "
                  f"{', '.join(map(str, sorted(spawned_steps)))}: "
                  f"{', '.join(str(spawned_steps[i]) for i in sorted(spawned_steps))} optimizer steps")
    try:
        _report(args, findings, where, chosen, report_to or sys.stderr)
    finally:
        if report_to is not None:
            report_to.close()
    if outcome.code != 0:
        return outcome.code
    return EXIT_FINDINGS if findings else EXIT_OK


def _merge_spawned(spawned, findings: list, errors: list[str]) -> tuple[list, list[str], dict[int, int]]:
    """The findings and check errors of the ranks the program spawned itself (torch.multiprocessing)
    added to the program's own, and each spawned rank's optimizer steps."""
    from lint_rules.diagnostics import Finding
    from pytest_torchcheck.watch import ranks

    reports, missing = spawned.collect()
    if missing:
        print(f"torchcheck: warning: {missing} of the processes the program spawned sent no report: their "
              "findings are missing", file=sys.stderr)
    if not reports:
        return findings, errors, {}
    by_rank = {i: [Finding.from_dict(f) for f in data.get("findings", [])] for i, data in reports.items()}
    errors = errors + [f"spawned rank {i}: {e}" for i, data in sorted(reports.items()) for e in data.get("errors", [])]
    merged = sorted(findings + ranks.merge(by_rank, "spawned rank", "spawned ranks"), key=Finding.sort_key)
    return merged, errors, {i: int(data.get("steps", 0)) for i, data in reports.items()}


def _merge_ranks(launch, started: float, findings: list, errors: list[str]) -> tuple[list, list[str], list[int]]:
    """This rank's findings and check errors with those the other ranks of its node left, and the ranks
    that reported."""
    from lint_rules.diagnostics import Finding
    from pytest_torchcheck.watch import ranks

    others, missing = ranks.collect(launch, started)
    by_rank = {launch.rank: findings}
    merged_errors = [f"rank {launch.rank}: {e}" for e in errors]
    for rank, data in sorted(others.items()):
        by_rank[rank] = [Finding.from_dict(f) for f in data.get("findings", [])]
        merged_errors += [f"rank {rank}: {e}" for e in data.get("errors", [])]
    if missing:
        print(f"torchcheck: warning: {missing} of the {launch.local_world_size} ranks on this machine sent no "
              f"report within {ranks.WAIT_S:.0f} s after rank {launch.rank} ended: their findings are missing",
              file=sys.stderr)
    return ranks.merge(by_rank), merged_errors, sorted(by_rank)


def _open_output(path: str | None):
    if not path:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--output-file {path!r}: cannot write: {e.strerror}") from None


def _report(args: argparse.Namespace, findings: list, where: str, chosen: list[str], out) -> None:
    from lint_rules.output import write_report

    rules = []
    if args.format == "sarif":  # the rules' metadata: their docs are the linter's
        rules = [r for c in sorted({f.code for f in findings}) if (r := registry.lookup(c)) is not None]
    sys.stdout.flush()  # the program's output first
    write_report(out, args.format, findings, 1, quiet=True, checked_paths=sorted({f.path for f in findings}),
                 rules=rules)
    if args.format in ("text", "concise") and not args.quiet:
        checks = ", ".join(chosen) or "none"
        if findings:
            noun = "finding" if len(findings) == 1 else "findings"
            out.write(f"Found {len(findings)} {noun} at run time ({where}; checks: {checks}).\n")
        else:
            out.write(f"No findings at run time ({where}; checks: {checks}).\n")
    out.flush()
