"""benchmarks/realbugs_mined/mine.py (with materialise.py and score.py): from a git history to a
scored case, on a small repository built here; no fetched code is involved."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "realbugs_mined"

BUGGY = """\
import torch


def train(model, loader, optimizer, loss_fn):
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""
FIXED = BUGGY.replace("        loss = loss_fn", "        optimizer.zero_grad()\n        loss = loss_fn")
# A new function that clears gradients: a feature, not a fix (a def is added).
FEATURE = FIXED + """

def finetune(model, loader, optimizer, loss_fn):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
"""

_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@invalid", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@invalid", "PYTHONPATH": str(ROOT)}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=_ENV).stdout.strip()


def _repo(mirrors: Path, name: str, files_per_commit: list[dict[str, str]]) -> list[str]:
    repo = mirrors / name.replace("/", "+") / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    shas = []
    for i, files in enumerate(files_per_commit):
        for path, text in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return shas


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, env=_ENV)


def _half(name: str) -> str:
    spec = importlib.util.spec_from_file_location("realbugs_mined_split", BENCH / "split.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.half(name)


@pytest.fixture
def mirrors(tmp_path):
    mirrors = tmp_path / "mirrors"
    shas = _repo(mirrors, "acme/widgets", [
        {"train.py": BUGGY, "README.md": "x", "tests/test_train.py": BUGGY},
        {"train.py": FIXED},
        {"train.py": FEATURE},
        {"tests/test_train.py": FIXED},  # the same fix in a test file is never a case
    ])
    # A reserved repository (benchmarks/precision/README.md) with the same fix is never scanned.
    _repo(mirrors, "facebookresearch/fairseq", [{"train.py": BUGGY}, {"train.py": FIXED}])
    return mirrors, shas


def _scan(tmp_path, mirrors) -> tuple[subprocess.CompletedProcess, Path, Path]:
    out, repos = tmp_path / "candidates.csv", tmp_path / "repositories.toml"
    done = _run("mine.py", "--mirrors", str(mirrors), "scan", "-q", "--out", str(out), "--repositories", str(repos))
    return done, out, repos


def test_scan_finds_the_fix_and_only_the_fix(tmp_path, mirrors):
    mirrors, shas = mirrors
    done, out, repos = _scan(tmp_path, mirrors)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    assert [(r["repository"], r["family"], r["expected"], r["fix_commit"], r["parent_commit"], r["path"])
            for r in rows] == [("acme/widgets", "zero-grad-added", "TRN102", shas[1], shas[0], "train.py")]
    assert rows[0]["half"] == _half("acme/widgets")
    assert "fairseq" not in repos.read_text()
    assert f'commit = "{shas[-1]}"' in repos.read_text()


def test_scan_is_deterministic(tmp_path, mirrors):
    mirrors, _ = mirrors
    first = _scan(tmp_path, mirrors)[1].read_bytes()
    second = _scan(tmp_path, mirrors)[1].read_bytes()
    assert first == second


def test_verified_candidate_is_materialised_and_scored(tmp_path, mirrors):
    mirrors, shas = mirrors
    _, out, _ = _scan(tmp_path, mirrors)
    cid = next(csv.DictReader(out.open()))["id"]
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text(f"id,verdict,shape,reason,expected\n{cid},verified,direct,The loop never clears gradients.,\n")
    manifest = tmp_path / "manifest.toml"
    made = _run("mine.py", "--candidates", str(out), "--verdicts", str(verdicts),
                "manifest", "--manifest", str(manifest))
    assert made.returncode == 0, made.stderr
    assert "1 verified cases" in made.stdout

    data = tmp_path / "data"
    mat = _run("materialise.py", "--mirrors", str(mirrors), "--out", str(data), "--manifest", str(manifest))
    assert mat.returncode == 0, mat.stderr
    tree = data / "acme+widgets"
    assert (tree / shas[0] / "train.py").read_text() == BUGGY
    assert (tree / shas[1] / "train.py").read_text() == FIXED
    assert not (tree / shas[0] / "README.md").exists()  # only what a lint needs

    report = tmp_path / "out.json"
    scored = _run("score.py", "--root", str(data), "--manifest", str(manifest), "--json", str(report), "--show-check")
    assert scored.returncode == 0, scored.stderr
    [outcome] = json.loads(report.read_text())
    assert outcome["caught"] and outcome["caught_at_fix"] and outcome["clean"] and outcome["clean_at_fix"]
    assert cid in scored.stdout


def test_check_half_cases_are_not_printed_without_show_check(tmp_path, mirrors):
    mirrors, _ = mirrors
    _, out, _ = _scan(tmp_path, mirrors)
    row = next(csv.DictReader(out.open()))
    # Pretend the case is in the check half by scoring a manifest that says so: the split decides,
    # so a wrong half is refused, and the real half of this name is used below.
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text(f"id,verdict,shape,reason\n{row['id']},verified,direct,No clear.\n")
    manifest = tmp_path / "manifest.toml"
    _run("mine.py", "--candidates", str(out), "--verdicts", str(verdicts), "manifest", "--manifest", str(manifest))
    data = tmp_path / "data"
    _run("materialise.py", "--mirrors", str(mirrors), "--out", str(data), "--manifest", str(manifest))
    scored = _run("score.py", "--root", str(data), "--manifest", str(manifest))
    assert scored.returncode == 0, scored.stderr
    shown = row["id"] in scored.stdout
    assert shown == (row["half"] == "tune")

    wrong = manifest.read_text().replace(f'half = "{row["half"]}"',
                                         f'half = "{"check" if row["half"] == "tune" else "tune"}"')
    manifest.write_text(wrong)
    refused = _run("score.py", "--root", str(data), "--manifest", str(manifest))
    assert refused.returncode == 2
    assert "split.py puts acme/widgets in" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_bad_input_is_refused_without_a_traceback(tmp_path, mirrors):
    mirrors, _ = mirrors
    _, out, _ = _scan(tmp_path, mirrors)
    unknown = _run("mine.py", "--mirrors", str(mirrors), "--candidates", str(out), "show", "no-such-case")
    assert unknown.returncode == 2
    assert "no candidate 'no-such-case'" in unknown.stderr
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict,shape,reason\nx,maybe,,?\n")
    bad = _run("mine.py", "--candidates", str(out), "--verdicts", str(verdicts), "manifest",
               "--manifest", str(tmp_path / "m.toml"))
    assert bad.returncode == 2
    assert "verdict 'maybe'; allowed: verified, rejected" in bad.stderr
    missing = _run("mine.py", "scan", str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    assert "not a git directory" in missing.stderr
    for out_text in (unknown.stderr, bad.stderr, missing.stderr):
        assert "Traceback" not in out_text
