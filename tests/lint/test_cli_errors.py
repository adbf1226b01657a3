"""Files that could not be checked: every report says so, none says that all checks passed.

The CLI runs as a subprocess (see test_cli.run); each case has one file that cannot be decoded
and, in some, a FIFO named on the command line, with and without files that lint fine.
"""

from __future__ import annotations

import json
import os
from xml.etree import ElementTree as ET

import pytest

from lint_rules.output import summary, summary_of_fixes
from tests.lint.test_cli import CLEAN, DATA_PARALLEL, run, write

UNDECODABLE = b"import torch\nx = '\xff'\n"
DECODE_ERROR = "cannot decode bad.py: byte 0xff at line 2, column 6 is not valid utf-8"


def _bad(tmp_path, *, fifo: bool = False) -> list[str]:
    (tmp_path / "bad.py").write_bytes(UNDECODABLE)
    if fifo:
        os.mkfifo(tmp_path / "pipe.py")
        return ["bad.py", "pipe.py"]
    return ["bad.py"]


def test_text_never_says_all_checks_passed_when_every_file_failed(tmp_path):
    r = run("lint", *_bad(tmp_path, fifo=True), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "All checks passed" not in r.stdout
    assert r.stdout.splitlines()[-1] == (
        "No findings in 0 files checked; 2 files could not be checked (1 cannot be decoded, 1 not a regular "
        "file): see the errors on standard error.")
    assert f"torchcheck: error: {DECODE_ERROR}" in r.stderr
    assert "torchcheck: error: cannot read pipe.py: not a regular file (a FIFO)" in r.stderr


def test_text_summary_counts_failed_files_next_to_passing_ones(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = run("lint", "ok.py", *_bad(tmp_path), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout.splitlines()[-1] == ("No findings in 1 file checked; 1 file could not be checked (cannot be "
                                         "decoded): see the error on standard error.")


def test_text_summary_counts_failed_files_next_to_findings(tmp_path):
    write(tmp_path, {"dp.py": DATA_PARALLEL})
    r = run("lint", "dp.py", *_bad(tmp_path), cwd=tmp_path)
    assert r.returncode == 2
    assert "dp.py:2:9: TRN301" in r.stdout
    assert r.stdout.splitlines()[-1] == ("Found 1 finding in 1 file (1 file checked); 1 file could not be checked "
                                         "(cannot be decoded): see the error on standard error.")


def test_fix_only_summary_counts_failed_files(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = run("lint", "--fix-only", "ok.py", *_bad(tmp_path), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout.splitlines()[-1] == ("No fixes applied (1 file checked); 1 file could not be checked (cannot be "
                                         "decoded): see the error on standard error.")


def test_diff_summary_counts_failed_files(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = run("lint", "--diff", "ok.py", *_bad(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines()[-2:] == ["No fixes available.", "1 file could not be checked (cannot be decoded)."]


def test_junit_reports_each_file_not_checked_as_an_error_case(tmp_path):
    write(tmp_path, {"dp.py": DATA_PARALLEL})
    r = run("lint", "--format", "junit", "dp.py", *_bad(tmp_path, fifo=True), cwd=tmp_path)
    assert r.returncode == 2
    suite = ET.fromstring(r.stdout).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "2")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["dp.py"].find("failure") is not None and cases["dp.py"].find("error") is None
    assert cases["bad.py"].find("error").get("message").startswith(DECODE_ERROR)
    assert cases["bad.py"].find("error").get("type") == "cannot be decoded"
    assert cases["pipe.py"].find("error").get("message") == "cannot read pipe.py: not a regular file (a FIFO)"


def test_github_annotates_each_file_not_checked(tmp_path):
    r = run("lint", "--format", "github", *_bad(tmp_path, fifo=True), cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"::error file=bad.py,title=torchcheck::{DECODE_ERROR}")
    assert lines[1] == "::error file=pipe.py,title=torchcheck::cannot read pipe.py: not a regular file (a FIFO)"


def test_sarif_run_is_unsuccessful_with_a_located_notification_per_file(tmp_path):
    write(tmp_path, {"dp.py": DATA_PARALLEL})
    r = run("lint", "--format", "sarif", "dp.py", *_bad(tmp_path), cwd=tmp_path)
    assert r.returncode == 2
    sarif_run = json.loads(r.stdout)["runs"][0]
    invocation = sarif_run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["message"]["text"].startswith(DECODE_ERROR)
    assert note["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "bad.py", "uriBaseId": "%SRCROOT%"}
    assert [res["ruleId"] for res in sarif_run["results"]] == ["TRN301"]


@pytest.mark.parametrize("fmt", ["json", "json-lines", "gitlab", "concise"])
def test_findings_only_formats_exit_2_with_the_error_on_stderr(tmp_path, fmt):
    """These formats list findings only (their schema has no place for an error): stdout holds the findings
    of the files that were checked, standard error names the file that was not, and the exit code is 2."""
    write(tmp_path, {"dp.py": DATA_PARALLEL})
    r = run("lint", "--format", fmt, "dp.py", *_bad(tmp_path), cwd=tmp_path)
    assert r.returncode == 2
    assert f"torchcheck: error: {DECODE_ERROR}" in r.stderr
    assert "dp.py" in r.stdout and "bad.py" not in r.stdout and "All checks passed" not in r.stdout


def test_summary_names_every_reason():
    errors = ["cannot read a.py: Permission denied", "cannot read b.py: not a regular file (a FIFO)",
              "cannot decode c.py: byte 0xff", "cannot lint d.py: nested too deeply",
              "cannot read e.py: over the limit of 10 MiB for one file", "cannot read f.py: Permission denied"]
    assert summary([], 3, errors=errors) == (
        "No findings in 3 files checked; 6 files could not be checked (2 cannot be read, 1 cannot be decoded, "
        "1 cannot be parsed, 1 not a regular file, 1 too large): see the errors on standard error.")
    assert summary([], 1, fix_errors=["cannot write g.py: Read-only file system"]) == (
        "No findings in 1 file checked; 1 file could not be fixed: see the error on standard error.")
    assert summary([], 2) == "All checks passed (2 files checked)."
    assert summary_of_fixes(2, 1, errors=errors[:1]) == (
        "Fixed 2 findings (1 file checked); 1 file could not be checked (cannot be read): see the error on standard "
        "error.")


# A coding cookie naming a codec that registers itself at start-up (the future-fstrings package), common
# in older research code: its bytes are UTF-8.
COOKIE = "# -*- coding: future_fstrings -*-\n"


def test_a_coding_cookie_of_an_unknown_codec_is_read_as_utf8(tmp_path):
    (tmp_path / "t.py").write_bytes((COOKIE + "import torch\nmodel = torch.nn.DataParallel(model)  # é\n").encode())
    r = run("lint", "--format", "json", "t.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert [(f["code"], f["line"]) for f in json.loads(r.stdout)] == [("TRN301", 3)]


def test_a_fix_keeps_a_file_with_an_unknown_codec_utf8(tmp_path):
    source = COOKIE + "import torch\nx = torch.log(torch.softmax(y, dim=1))  # é\n"
    (tmp_path / "t.py").write_bytes(source.encode())
    r = run("lint", "--fix", "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    fixed = (tmp_path / "t.py").read_bytes().decode("utf-8")
    assert fixed.startswith(COOKIE) and "log_softmax" in fixed and fixed.endswith("# é\n")


def test_an_unknown_codec_with_bytes_that_are_not_utf8_is_still_an_error(tmp_path):
    (tmp_path / "t.py").write_bytes(COOKIE.encode() + b"import torch\nx = '\xff'\n")
    r = run("lint", "t.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "torchcheck: error: cannot decode t.py: unknown encoding: future_fstrings" in r.stderr
