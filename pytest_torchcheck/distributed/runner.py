"""Runs one distributed test from the pytest process: hand it to the ranks, then log the merged reports."""

from __future__ import annotations

from typing import Any

import pytest
from _pytest.reports import TestReport

from pytest_torchcheck.distributed.merge import merge

# Options of the parent's command line that the rank sessions must share, with whether they take a value.
_FORWARDED = {"-p": True, "-o": True, "--override-ini": True, "--import-mode": True, "--confcutdir": True,
              "--noconftest": False, "-W": True, "--pythonwarnings": True, "--tb": True, "-l": False,
              "--showlocals": False, "--full-trace": False, "--torchcheck-devices": True,
              "--torchcheck-nan-guard": False, "--strict-markers": False, "--strict-config": False}


def rank_args(config: pytest.Config) -> list[str]:
    """The command line of the rank-side pytest session: the parent's rootdir, ini file and plugins."""
    from pytest_torchcheck.core import BASE_SEED

    args = ["--rootdir", str(config.rootpath), "-p", "no:cacheprovider", "-p", "no:faulthandler",
            "-p", "no:xdist", "-p", "no:randomly", "--capture=no", f"--verbosity={config.option.verbose}"]
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    given = list(config.invocation_params.args)
    i = 0
    while i < len(given):
        arg = str(given[i])
        name, eq, _ = arg.partition("=")
        if name in _FORWARDED:
            if _FORWARDED[name] and not eq:
                args += given[i:i + 2]
                i += 2
                continue
            args.append(arg)
        elif arg.startswith("-p") and len(arg) > 2 and arg != "-p":
            if arg[2:] != "xdist":
                args.append(arg)
        i += 1
    # The parent's effective base seed, so every rank seeds the test alike (even for --torchcheck-seed=random);
    # and no addopts: the parent's already applied, and e.g. '-n auto' means nothing in a rank.
    args += [f"--torchcheck-seed={config.stash[BASE_SEED]}", "-o", "addopts="]
    return [str(a) for a in args]


def run_in_ranks(item: pytest.Item, nextitem: pytest.Item | None, spec: dict, harness: Any) -> None:
    from pytest_torchcheck.distributed.harness import HarnessError
    from pytest_torchcheck.core import report_section

    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    config = item.config

    def deserialize(data: dict) -> TestReport:
        return config.hook.pytest_report_from_serializable(config=config, data=data)

    def section() -> str:
        return report_section(item, world_size=spec["world_size"])

    try:
        run = harness.run(item.nodeid, str(item.path), spec["world_size"], spec["backend"], float(spec["timeout"]),
                          spec["isolate"])
    except HarnessError as e:
        reports = [_report(item, "setup", "failed", f"torchcheck distributed harness: {e}"),
                   _report(item, "teardown", "passed", None)]
    else:
        reports = merge(item, run, deserialize, section)
    # Fixtures of the pytest process's own stack (set up by earlier, ordinary tests) are torn down as if
    # this test had run here, so the next test's setup finds the stack it expects.
    try:
        item.session._setupstate.teardown_exact(nextitem)
    except Exception as e:  # a module fixture's finalizer failed: report it at this test's teardown
        reports[-1] = _report(item, "teardown", "failed", f"{type(e).__name__}: {e}")
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _report(item: pytest.Item, when: str, outcome: str, longrepr: Any) -> TestReport:
    return TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, outcome, longrepr, when,
                      user_properties=list(item.user_properties))

