"""The validation corpus of ``torchcheck run`` (tests/plugin/watch_corpus/, issue #23), run under the watch.

Each real-bug pair (a reduction of a public bug-fix commit: a verified case of the mined benchmark's tune
half, a case of the older real-bug benchmark, or a fix commit read in its repository's history) must be
reported at the lines its buggy program marks ``# BUG TRNxxx``, with those codes, and nowhere else; its
fixed twin and every clean training script must run with no finding. All single-process programs run in
ONE subprocess (watch_corpus/driver.py: torch is imported once); the multi-process ones (``ranks = 2``,
``torchrun = true``) run under ``torchrun --nproc-per-node 2 -m lint_rules run``, one process per rank.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import re
import sys
import tokenize
import tomllib
from pathlib import Path

import pytest

from tests import processes

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "plugin" / "watch_corpus"
MANIFEST = tomllib.loads((CORPUS / "manifest.toml").read_text(encoding="utf-8"))
PAIRS = {case["id"]: case for case in MANIFEST["pair"]}
CLEAN = {script["id"]: script for script in MANIFEST["clean"]}
LOCAL_PAIRS = [i for i, case in PAIRS.items() if case.get("ranks", 1) == 1]
RANKED_PAIRS = [i for i, case in PAIRS.items() if case.get("ranks", 1) > 1]
TORCHRUN_CLEAN = [i for i, script in CLEAN.items() if script.get("torchrun")]
MINED = REPO / "benchmarks" / "realbugs_mined"
SHAPES = {"textbook", "helper", "other file", "container", "spelling"}

_BUG = re.compile(r"#\s*BUG((?:\s+TRN\d{3})+)\s*$")


def bug_markers(folder: Path) -> dict[tuple[str, int], set[str]]:
    """(file relative to ``folder``, line) -> the codes its ``# BUG TRNxxx ...`` comment names."""
    found: dict[tuple[str, int], set[str]] = {}
    for path in sorted(folder.glob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        for token in tokens:
            if token.type == tokenize.COMMENT and (m := _BUG.search(token.string)):
                found[(path.name, token.start[0])] = set(m.group(1).split())
    return found


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every single-process program's outcome under the watch, from one run of the driver."""
    from tests.plugin.watch_helpers import drive

    return drive(tmp_path_factory, "watch_corpus")


def describe(result: dict) -> str:
    findings = "\n".join(f"  {f['path']}:{f['line']}: {f['code']} {f['message']}" for f in result["findings"])
    return (f"exit code {result['exit_code']}; check errors {result['errors']}\nfindings:\n{findings or '  (none)'}"
            f"\nprogram output (tail):\n{result.get('output', '')[-2000:]}")


def assert_reported_at_bug_lines(folder: Path, findings: list[dict], result: dict) -> None:
    markers = bug_markers(folder)
    assert markers, f"{folder} marks no line with '# BUG TRNxxx'"
    seen = {(f["path"], f["line"], f["code"]) for f in findings}
    missing = sorted((path, line, code) for (path, line), codes in markers.items() for code in codes
                     if (path, line, code) not in seen)
    elsewhere = sorted((f["path"], f["line"], f["code"]) for f in findings if (f["path"], f["line"]) not in markers)
    assert not missing, f"not reported at the marked lines: {missing}\n{describe(result)}"
    assert not elsewhere, f"reported at unmarked lines: {elsewhere}\n{describe(result)}"


# Pairs whose bug the checks are known to miss, each with why (manifest: missed = "..."). They count
# against the catch rate, and a check that starts catching one fails test_a_known_miss_is_still_missed
# until its manifest entry is updated: a miss is tracked, never hidden.
CAUGHT = [c for c in LOCAL_PAIRS if not PAIRS[c].get("missed")]
MISSED = [c for c in LOCAL_PAIRS if PAIRS[c].get("missed")]
TARGET = 0.9  # issue #23: at least 90% of runtime-visible real bugs caught at the right line


@pytest.mark.parametrize("case", CAUGHT)
def test_buggy_program_is_reported_at_its_bug_lines(results: dict[str, dict], case: str) -> None:
    result = results[f"{case}/buggy"]
    assert result["exit_code"] == 0, describe(result)
    assert result["errors"] == [], describe(result)
    assert_reported_at_bug_lines(CORPUS / "pairs" / case / "buggy", result["findings"], result)


@pytest.mark.parametrize("case", MISSED)
def test_a_known_miss_is_still_missed(results: dict[str, dict], case: str) -> None:
    result = results[f"{case}/buggy"]
    assert (result["exit_code"], result["errors"]) == (0, []), describe(result)
    marked = {(path, line, code) for (path, line), codes in bug_markers(CORPUS / "pairs" / case / "buggy").items()
              for code in codes}
    seen = {(f["path"], f["line"], f["code"]) for f in result["findings"]}
    assert not marked & seen, f"{case} is caught now: drop its `missed` from the manifest\n{describe(result)}"
    assert not seen, f"{case}: a finding elsewhere\n{describe(result)}"


def test_the_catch_rate_meets_the_target() -> None:
    pairs = [c for c in PAIRS if PAIRS[c].get("code")]
    rate = 1 - len([c for c in pairs if PAIRS[c].get("missed")]) / len(pairs)
    assert rate >= TARGET, f"{rate:.0%} of the corpus's real bugs caught; the target is {TARGET:.0%}"


@pytest.mark.parametrize("case", LOCAL_PAIRS)
def test_fixed_twin_runs_clean(results: dict[str, dict], case: str) -> None:
    result = results[f"{case}/fixed"]
    assert (result["exit_code"], result["findings"], result["errors"]) == (0, [], []), describe(result)


@pytest.mark.parametrize("name", list(CLEAN))
def test_clean_script_runs_clean(results: dict[str, dict], name: str) -> None:
    result = results[f"clean/{name}"]
    assert (result["exit_code"], result["findings"], result["errors"]) == (0, [], []), describe(result)


def torchrun(folder: Path, main: str, log_dir: Path,
             select: list[str] | None = None) -> tuple[int, list[dict], str, str]:
    """Run ``torchcheck run MAIN`` on 2 gloo ranks (``--select`` a pair's ``select``); the exit code, every
    rank's findings, the output, and the ranks' own logs in full (where a crash of the program or of the
    watch would show: the launcher's ``ChildFailedError`` traceback when rank 0 exits 1 on findings is no
    crash, docs/plugin/run.md)."""
    chosen = ["--select", ",".join(select)] if select else []
    done = processes.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "--redirects", "3",
         "--log-dir", str(log_dir), "-m", "lint_rules", "run", "--format", "json-lines", *chosen, main],
        cwd=folder, env=env(), timeout=300)
    findings, logs, ranks = [], [done.stdout, done.stderr], []
    for log in sorted(log_dir.rglob("std*.log")):
        text = log.read_text(encoding="utf-8", errors="replace")
        logs.append(f"--- {log.relative_to(log_dir)}\n{text}")
        ranks.append(text)
        if log.name != "stderr.log":
            continue
        for line in text.splitlines():
            if line.startswith("{"):
                finding = json.loads(line)
                path = Path(finding["path"])
                finding["path"] = os.path.relpath(path if path.is_absolute() else folder / path, folder)
                findings.append(finding)
    return done.returncode, findings, "\n".join(logs)[-6000:], "\n".join(ranks)


@pytest.mark.parametrize("case", RANKED_PAIRS)
def test_multi_process_bug_is_reported_under_torchrun(tmp_path: Path, case: str) -> None:
    folder = CORPUS / "pairs" / case / "buggy"
    code, findings, output, ranks = torchrun(folder, PAIRS[case]["main"], tmp_path / "logs", PAIRS[case].get("select"))
    result = {"exit_code": code, "errors": [], "findings": findings, "output": output}
    assert "Traceback" not in ranks, describe(result)
    assert code == 1, describe(result)  # rank 0 exits 1 on findings
    assert_reported_at_bug_lines(folder, findings, result)


@pytest.mark.parametrize("case", RANKED_PAIRS)
def test_multi_process_fixed_twin_runs_clean_under_torchrun(tmp_path: Path, case: str) -> None:
    code, findings, output, _ = torchrun(CORPUS / "pairs" / case / "fixed", PAIRS[case]["main"], tmp_path / "logs",
                                         PAIRS[case].get("select"))
    assert (code, findings) == (0, []), output


@pytest.mark.parametrize("name", TORCHRUN_CLEAN)
def test_clean_script_runs_clean_under_torchrun(tmp_path: Path, name: str) -> None:
    code, findings, output, _ = torchrun(CORPUS / "clean", CLEAN[name]["main"], tmp_path / "logs")
    assert (code, findings) == (0, []), output


# The corpus's own consistency: no process started, so these run first and fail with a precise message.

def _tune_cases() -> dict[str, dict]:
    with open(MINED / "candidates.csv", newline="", encoding="utf-8") as f:
        candidates = {row["id"]: row for row in csv.DictReader(f)}
    with open(MINED / "verdicts.csv", newline="", encoding="utf-8") as f:
        verified = {row["id"] for row in csv.DictReader(f) if row["verdict"] == "verified"}
    return {i: row for i, row in candidates.items() if row["half"] == "tune" and i in verified}


def _realbugs_cases() -> dict[str, dict]:
    manifest = tomllib.loads((REPO / "benchmarks" / "realbugs" / "manifest.toml").read_text(encoding="utf-8"))
    return {case["id"]: case for case in manifest["case"]}


# benchmarks/precision/README.md: kept for the independent measurement, never a source
RESERVED = {"Lightning-AI/pytorch-lightning", "facebookresearch/fairseq", "facebookresearch/detectron2",
            "mlfoundations/open_clip", "ultralytics/yolov5", "eriklindernoren/PyTorch-GAN",
            "hunkim/PyTorchZeroToAll", "kuangliu/pytorch-cifar", "MorvanZhou/PyTorch-Tutorial",
            "yunjey/pytorch-tutorial"}
SOURCES = {"mined", "realbugs", "fetched"}


def test_every_pair_is_a_verified_tune_case_with_its_source() -> None:
    """A pair reduces a verified case of the mined tune half (the default source), a case of the older
    real-bug benchmark (``source = "realbugs"``: same id, repository, fix commit and path), or a fix commit
    read in the repository's history (``source = "fetched"``: its full hash, the commit's subject, and an id
    that names the repository, the code and the commit like every other)."""
    tune, realbugs = _tune_cases(), _realbugs_cases()
    for case in PAIRS.values():
        source = case.get("source", "mined")
        assert source in SOURCES, f"{case['id']}: source {source!r} is none of {sorted(SOURCES)}"
        if source == "mined":
            assert case["id"] in tune, f"{case['id']}: not a verified case of the tune half"
            origin = tune[case["id"]]
        elif source == "realbugs":
            assert case["id"] in realbugs, f"{case['id']}: not a case of benchmarks/realbugs/manifest.toml"
            origin = realbugs[case["id"]]
        else:
            assert case["id"] not in tune and case["id"] not in realbugs, f"{case['id']}: a benchmark case"
            assert re.fullmatch(r"[0-9a-f]{40}", case["fix_commit"]), f"{case['id']}: fix_commit is no full hash"
            name, code, sha = case["repository"].split("/")[1].lower(), case["code"].lower(), case["fix_commit"][:7]
            assert case["id"].startswith(f"{name}-{code}-{sha}-"), f"{case['id']}: not <repo>-<code>-<sha7>-<stem>"
            assert case["subject"] and case["repository"] not in RESERVED, case["id"]
            origin = case
        assert (case["repository"], case["fix_commit"], case["path"]) == (
            origin["repository"], origin["fix_commit"], origin["path"]), case["id"]
        assert case["shape"] in SHAPES, f"{case['id']}: shape {case['shape']!r} is none of {sorted(SHAPES)}"
        assert case["bug"] and case["site"], case["id"]


@pytest.mark.parametrize("case", list(PAIRS))
def test_pair_layout_and_markers(case: str) -> None:
    buggy, fixed = CORPUS / "pairs" / case / "buggy", CORPUS / "pairs" / case / "fixed"
    names = sorted(p.name for p in buggy.glob("*.py"))
    assert names == sorted(p.name for p in fixed.glob("*.py")), f"{case}: buggy/ and fixed/ differ in file names"
    assert PAIRS[case]["main"] in names, f"{case}: no {PAIRS[case]['main']}"
    marked = set().union(*bug_markers(buggy).values()) if bug_markers(buggy) else set()
    assert marked == {PAIRS[case]["code"], *PAIRS[case].get("also", [])}, f"{case}: marked codes {sorted(marked)}"
    not_also = PAIRS[case].get("not_also", {})
    assert not set(not_also) & marked and all(not_also.values()), f"{case}: not_also {not_also} (marked, or no reason)"
    assert bug_markers(fixed) == {}, f"{case}: the fixed twin marks a bug"
    if PAIRS[case]["shape"] not in ("container", "spelling"):
        elsewhere = {path for path, _ in bug_markers(buggy)} != {PAIRS[case]["main"]}
        assert elsewhere == (PAIRS[case]["shape"] == "other file"), f"{case}: shape {PAIRS[case]['shape']!r}"
    assert any((buggy / n).read_text() != (fixed / n).read_text() for n in names), f"{case}: the twins are equal"


def _selected(case: dict) -> list[str]:
    from pytest_torchcheck.watch.watcher import default_codes, select_checks

    if not case.get("select"):
        return default_codes()
    return select_checks(case["select"], [], f"the manifest's select of {case['id']}", "")[0]


def test_every_pair_runs_the_checks_of_its_codes() -> None:
    # an opt-in check (TRN904) runs only where a pair's `select` names it: without, its pair is never watched
    unwatched = {i: sorted({c["code"], *c.get("also", [])} - set(_selected(c))) for i, c in PAIRS.items()}
    assert not {i: codes for i, codes in unwatched.items() if codes}, "add these codes to the pairs' select"


NAN_PROGRAM = """\
import torch
import torch.nn as nn


class LogScale(nn.Module):
    def forward(self, x):
        return torch.log(x)


torch.manual_seed(0)
model, log_scale = nn.Sequential(nn.Linear(4, 4), nn.ReLU()), LogScale()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = log_scale(model(torch.randn(8, 4))).mean()  # the log of the ReLU's zeros: -inf
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_the_driver_runs_a_pair_under_the_checks_its_select_names(tmp_path: Path) -> None:
    # the same program under the pair's select (the opt-in TRN904) and under the default checks, which
    # leave TRN904 out: only the selected run may report its -inf loss
    spec = importlib.util.spec_from_file_location("watch_corpus_driver", CORPUS / "driver.py")
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    (tmp_path / "train.py").write_text(NAN_PROGRAM)
    manifest = {"pair": [{"id": "selected", "main": "train.py", "select": ["TRN904"]},
                         {"id": "default", "main": "train.py"}]}
    buggy = [{**e, "folder": tmp_path} for e in driver.programs(manifest) if e["id"].endswith("/buggy")]
    selected, default = (driver.run_one(entry, plain=False) for entry in buggy)
    line = NAN_PROGRAM.splitlines().index("    loss = log_scale(model(torch.randn(8, 4))).mean()  "
                                          "# the log of the ReLU's zeros: -inf") + 1
    assert [(f["code"], f["line"]) for f in selected["findings"]] == [("TRN904", line)], describe(selected)
    assert (default["exit_code"], default["findings"]) == (0, []), describe(default)
    from lint_rules.errors import UsageError

    with pytest.raises(UsageError, match="TRN9O4"):  # a misspelt code is an error, never an empty selection
        driver.run_one({**buggy[0], "select": ["TRN9O4"]}, plain=False)


def test_corpus_size() -> None:
    assert len(PAIRS) >= 37 and len(CLEAN) >= 10, (len(PAIRS), len(CLEAN))
    assert set(CLEAN) == {Path(s["main"]).stem for s in CLEAN.values()}
    assert sorted(p.name for p in (CORPUS / "clean").glob("*.py")) == sorted(s["main"] for s in CLEAN.values())
    assert sorted(p.name for p in (CORPUS / "pairs").iterdir() if p.is_dir()) == sorted(PAIRS)


MESSAGE_LIMIT = 480  # characters: about six lines of a terminal, the longest a finding may take


def test_every_finding_is_one_line_with_what_was_observed(results: dict[str, dict]) -> None:
    # A runtime finding says what was seen, with its numbers (counts, steps, values), on one line of the
    # linter's format, short enough to read in a terminal or a CI log.
    findings = [(r["id"], f) for r in results.values() for f in r["findings"]]
    assert len(findings) >= 40
    for program, f in findings:
        message = f["message"]
        assert "\n" not in message and len(message) <= MESSAGE_LIMIT, (program, f["code"], len(message))
        assert any(ch.isdigit() for ch in message), (program, f["code"], message)
