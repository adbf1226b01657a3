"""Turns what every rank did into the one set of reports pytest shows for a distributed test.

The test passes only if every rank passes. Otherwise the root cause leads: the
rank whose problem came first (an exception, a skip, an xfail, a crash), with its
full traceback and captured output; the other ranks' problems follow, marked as
consequences. A rank that died is reported with its exit code or signal and the
tail of its output; a rank still running at the deadline with its Python stack.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

from _pytest._code.code import ReprEntryNative, ReprFileLocation, ReprTraceback, TerminalRepr
from _pytest.reports import TestReport

PHASES = ("setup", "call", "teardown")
DEATH_SLACK = 0.5  # seconds
_COLLECTIVE_TIMEOUTS = ("Timed out waiting", "Watchdog caught collective operation timeout")
# What a rank's collective raises when a peer's connection went away (gloo's wording; NCCL reports a remote
# error or an abort).
_PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "remote process exited",
              "NCCL communicator was aborted")
_HARNESS_FRAMES = ("/_pytest/", "/pluggy/", "pytest_torchcheck/distributed/", "<frozen runpy>")


@dataclass
class Problem:
    rank: int
    kind: str  # failed, skipped, xfailed, died, hung
    phase: str
    time: float
    report: Any = None
    text: str = ""  # for died/hung: the description


class DistributedFailureRepr(TerminalRepr):
    """A root-cause-first failure: a lead line, the root rank's traceback, then the consequences.

    It has the shape of an exception's report (``reprcrash``, ``reprtraceback``, ``sections``), so that pytest
    serializes it as one: an xdist worker sends it to the controller, and the short summary and the JUnit
    message there carry the root exception (``reprcrash``), not the first line of the text.
    """

    def __init__(self, lead: str, root: Any, consequences: list[tuple[str, str]], crash_message: str,
                 crash_path: str, crash_line: int) -> None:
        self.lead = lead
        self.root = root
        self.consequences = consequences
        self.reprcrash = ReprFileLocation(crash_path, crash_line, crash_message)
        self.sections: list[tuple[str, str, str]] = []

    @property
    def reprtraceback(self) -> ReprTraceback:
        """The whole text as one native entry (what crosses to the xdist controller)."""
        return ReprTraceback([ReprEntryNative([line + "\n" for line in str(self).splitlines()])], None, "native")

    def toterminal(self, tw: Any) -> None:
        tw.line(self.lead, red=True, bold=True)
        tw.line("")
        if hasattr(self.root, "toterminal"):
            self.root.toterminal(tw)
        else:
            for line in str(self.root).splitlines():
                tw.line(line)
        one_liner = False
        for title, text in self.consequences:
            if not text:  # a one-line consequence
                if not one_liner:
                    tw.line("")
                one_liner = True
                tw.line(title)
                continue
            one_liner = False
            tw.line("")
            tw.sep("-", title)
            for line in text.rstrip().splitlines():
                tw.line(line)


def _order(p: Problem) -> tuple:
    """Root cause first: the earliest problem, except that a rank whose peer closed the connection on it
    is a consequence by nature (the peer failed, timed out or died first), and hangs come last."""
    return (p.kind == "hung", p.kind == "failed" and _peer_gone(p), p.time, p.rank)


def _peer_gone(p: Problem) -> bool:
    crash = getattr(p.report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(p.report.longrepr)
    return any(marker in text for marker in _PEER_GONE)


def problems_of(run: Any, reports: dict[int, dict[str, TestReport]]) -> list[Problem]:
    found = []
    for r, res in sorted(run.results.items()):
        if res.died is not None:
            # A death is seen up to a poll interval late, and its peers' "connection closed" errors come
            # after it: it counts as DEATH_SLACK seconds earlier than it was seen.
            found.append(Problem(r, "died", res.phase, (res.died_at or math.inf) - DEATH_SLACK,
                                 text=f"rank {r} of {run.world_size} (pid {res.pid}) died with {res.died} "
                                      f"during {res.phase}"))
            continue
        if res.stack is not None:
            if run.timed_out is not None:
                why = f"still running at the {run.timed_out:g} s deadline"
            else:
                why = "still running after another rank had failed (gave up after the grace period)"
            found.append(Problem(r, "hung", res.phase, math.inf,
                                 text=f"rank {r} of {run.world_size} (pid {res.pid}) was {why}, in {res.phase}"))
            continue
        for when in PHASES:
            rep = reports[r].get(when)
            if rep is None:
                continue
            if rep.failed:
                found.append(Problem(r, "failed", when, rep.stop, rep))
                break
            if rep.skipped:
                kind = "xfailed" if hasattr(rep, "wasxfail") else "skipped"
                found.append(Problem(r, kind, when, rep.stop, rep))
                break
    return found


def merge(item: Any, run: Any, deserialize: Callable[[dict], TestReport],
          torchcheck_section: Callable[[], str]) -> list[TestReport]:
    """The setup/call/teardown reports of ``item`` for the whole group of ranks."""
    reports = {r: {rep.when: rep for rep in map(deserialize, res.reports)} for r, res in run.results.items()}
    problems = problems_of(run, reports)
    ws = run.world_size
    base = dict(nodeid=item.nodeid, location=item.location, keywords={k: 1 for k in item.keywords},
                user_properties=list(item.user_properties))

    def phase_report(when: str, outcome: str = "passed", longrepr: Any = None, sections: list | None = None,
                     **extra: Any) -> TestReport:
        reps = [reports[r][when] for r in reports if when in reports[r]]
        start = min((rep.start for rep in reps), default=run.started)
        stop = max((rep.stop for rep in reps), default=start)
        report = TestReport(when=when, outcome=outcome, longrepr=longrepr, sections=sections or [],
                            duration=max((rep.duration for rep in reps), default=0.0), start=start, stop=stop,
                            **base)
        for key, value in extra.items():
            setattr(report, key, value)
        return report

    def outputs(when: str, root_rank: int | None = None) -> list[tuple[str, str]]:
        sections = []
        for r, res in sorted(run.results.items()):
            if res.output.strip():
                tag = ", root cause" if r == root_rank else ""
                sections.append((f"Captured output {when} (rank {r}{tag})", res.output))
        return sections

    if not problems:
        out = []
        for when in PHASES:
            extra = {}
            xpass = [reports[r][when].wasxfail for r in reports
                     if when in reports[r] and hasattr(reports[r][when], "wasxfail")]
            if xpass:
                extra["wasxfail"] = xpass[0]
            out.append(phase_report(when, sections=outputs(when) if when == "call" else [], **extra))
        return out

    root = min(problems, key=_order)
    others = [p for p in problems if p is not root]
    when = root.phase
    before = [phase_report(w) for w in PHASES[:PHASES.index(when)]]
    after = [phase_report("teardown")] if when != "teardown" else []
    sections = outputs(when, root.rank) + [("torchcheck", torchcheck_section())]

    if root.kind in ("skipped", "xfailed"):
        everyone = len(problems) == ws and all(p.kind == root.kind for p in problems)
        if root.kind == "skipped":
            path, line, reason = root.report.longrepr
            where = f"all {ws} ranks" if everyone else f"rank {root.rank} of {ws}"
            note = "" if everyone else _consequence_note(others)
            report = phase_report(when, "skipped", (path, line, f"{reason} [{where}]{note}"), sections)
        else:
            where = f"all {ws} ranks" if everyone else f"rank {root.rank} of {ws}"
            report = phase_report(when, "skipped", root.report.longrepr, sections,
                                  wasxfail=f"{root.report.wasxfail} [{where}]".strip())
        return before + [report] + after

    lead, root_repr, message, path, line = _describe_root(root, run, ws)
    consequences = []
    shown = {_failure_key(root)} if root.kind == "failed" else set()
    # After a collective timeout, where each rank waited is the diagnosis: every distinct traceback is kept.
    stuck = root.kind == "failed" and any(marker in message for marker in _COLLECTIVE_TIMEOUTS)
    for p in sorted(others, key=_order):
        title = f"rank {p.rank} of {ws}: {p.kind} in {p.phase} (consequence)"
        key = _failure_key(p) if p.kind == "failed" else None
        if key is not None and (key in shown or (_peer_gone(p) and not stuck)):
            # The same failure as one printed above, or a collective broken by the rank that failed first:
            # one line, not a second copy of a traceback.
            same = "the same failure as above" if key in shown else _crash_message(p)
            consequences.append((f"rank {p.rank} of {ws}: failed in {p.phase} at {_crash_location(p)} "
                                 f"(consequence): {same}", ""))
            continue
        if key is not None:
            shown.add(key)
        consequences.append((title, _problem_text(p, run)))
    passed = [r for r in sorted(reports) if r not in {p.rank for p in problems}]
    if passed:
        consequences.append((f"ranks that passed: {', '.join(map(str, passed))}", "(no error)"))
    longrepr = DistributedFailureRepr(lead, root_repr, consequences, message, path, line)
    return before + [phase_report(when, "failed", longrepr, sections)] + after


def _describe_root(root: Problem, run: Any, ws: int) -> tuple[str, Any, str, str, int]:
    res = run.results[root.rank]
    if root.kind == "failed":
        lr = root.report.longrepr
        crash = getattr(lr, "reprcrash", None)
        text = str(lr).strip()
        message = getattr(crash, "message", None) or (text.splitlines()[-1] if text else "")
        first = "failed first" if ws > 1 else "failed"
        lead = f"rank {root.rank} of {ws} {first}, in {root.phase} (root cause)"
        if any(marker in message for marker in _COLLECTIVE_TIMEOUTS):
            lead = (f"rank {root.rank} of {ws} timed out waiting in a collective, in {root.phase}: the process group's "
                    f"timeout expired, most likely on a collective that some ranks never entered or entered in a "
                    f"different order; every rank's traceback follows")
        return (lead, lr, f"[rank {root.rank} of {ws}, root cause] {message}",
                getattr(crash, "path", str(root.report.location[0])), getattr(crash, "lineno", 0))
    if root.kind == "died":
        body = f"{root.text}\n\nlast output of rank {root.rank}:\n{res.output.rstrip() or '(none)'}"
        return (f"{root.text} (root cause)", body, f"[rank {root.rank} of {ws}] died with {res.died}",
                "", 0)
    # hung: every rank is stuck; stacks show where
    body = f"{root.text}; its Python stack (most recent call first):\n{trim_stack(res.stack)}"
    if res.output.strip():
        body += f"\nlast output of rank {root.rank}:\n{res.output.rstrip()}"
    if run.timed_out is not None:
        lead = (f"distributed test timed out after {run.timed_out:g} s; the ranks were killed "
                f"(raise the limit with @pytest.mark.distributed(timeout=...))")
        message = f"timed out after {run.timed_out:g} s: rank(s) " + ", ".join(
            str(r) for r, x in sorted(run.results.items()) if x.stack is not None) + " still running"
    else:
        lead = f"rank {root.rank} of {ws} hung after another rank stopped"
        message = f"[rank {root.rank} of {ws}] hung"
    return lead, body, message, "", 0


def _problem_text(p: Problem, run: Any) -> str:
    res = run.results[p.rank]
    if p.kind == "failed":
        return str(p.report.longrepr)
    if p.kind in ("skipped", "xfailed"):
        reason = p.report.wasxfail if p.kind == "xfailed" else p.report.longrepr[2]
        return f"{p.kind}: {reason}"
    if p.kind == "died":
        return f"{p.text}\nlast output:\n{res.output.rstrip() or '(none)'}"
    text = f"{p.text}; its Python stack (most recent call first):\n{trim_stack(res.stack)}"
    if res.output.strip():
        text += f"\nlast output:\n{res.output.rstrip()}"
    return text


_RANK_WORDS = re.compile(r"\brank \d+( of \d+)?|\bon ranks? [\d, ]+")


def _crash_message(p: Problem) -> str:
    crash = getattr(p.report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(p.report.longrepr).strip().splitlines()[-1:]
    first = str(text).splitlines()[0] if text else ""
    return first if len(first) <= 200 else first[:197] + "..."


def _crash_location(p: Problem) -> str:
    crash = getattr(p.report.longrepr, "reprcrash", None)
    if crash is None:
        return "an unknown location"
    path = str(crash.path)
    if os.path.isabs(path) and path.startswith(os.getcwd() + os.sep):
        path = os.path.relpath(path)
    return f"{path}:{crash.lineno}"


def _failure_key(p: Problem) -> tuple[str, int, str]:
    """What makes two ranks' failures the same: the place and the message, whatever rank it names."""
    crash = getattr(p.report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None) or str(p.report.longrepr)
    return (str(getattr(crash, "path", "")), int(getattr(crash, "lineno", 0) or 0),
            _RANK_WORDS.sub("rank N", message))


def _consequence_note(others: list[Problem]) -> str:
    if not others:
        return ""
    parts = [f"rank {p.rank} {p.kind} in {p.phase}" for p in others]
    return " (then: " + "; ".join(parts) + ")"


def _torch_dir() -> str | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")  # the pytest process does not import torch
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return os.path.dirname(origin) + os.sep if origin else None


def trim_stack(stack: str) -> str:
    """A faulthandler dump that shows the user's frames: pytest's, pluggy's and the harness's frames below
    the test's own are dropped, and each run of torch's frames is one line naming its functions, most recent
    first (``(2 frames inside torch: all_reduce <- wrapper)``)."""
    out: list[str] = []
    torch_dir = _torch_dir()
    skipping = False
    torch_run: list[str] = []

    def flush() -> None:
        if torch_run:
            # faulthandler prints the most recent call first: the last frame of a run is the one the user called.
            names = [frame.rsplit(" in ", 1)[-1].strip() for frame in torch_run]
            shown = " <- ".join(names[:3]) + (" <- ..." if len(names) > 3 else "")
            out.append(f"  ({len(names)} frame{'s' if len(names) > 1 else ''} inside torch: {shown})")
            torch_run.clear()

    for line in stack.splitlines():
        if not line.startswith("  File "):
            flush()
            skipping = False
            out.append(line)
            continue
        if skipping:
            continue
        if any(marker in line for marker in _HARNESS_FRAMES):
            flush()
            out.append("  (frames of pytest and the torchcheck harness omitted)")
            skipping = True
            continue
        if torch_dir and line.startswith(f'  File "{torch_dir}'):
            torch_run.append(line)
            continue
        if line.startswith('  File "<frozen importlib'):
            continue  # the import system's frames: the module being imported is in the frames around them
        flush()
        out.append(line)
    flush()
    return "\n".join(out) + "\n"
