"""benchmarks/precision/run.py: fixed sampling, verdicts carried over, per-rule summary."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "precision" / "run.py"

BUGGY = """\
import torch
model = torch.nn.DataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x)
    loss.backward()
    opt.zero_grad()
    opt.step()
"""


def _module():
    spec = importlib.util.spec_from_file_location("precision_run", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sampling_is_every_kth_by_position():
    sample = _module().sample_positions
    assert sample(5, 10) == {0, 1, 2, 3, 4}
    assert sample(25, 10) == set(range(0, 25, 3))  # k = ceil(25 / 10) = 3: nine findings
    assert sample(100, 10) == set(range(0, 100, 10))


def _run(tmp_path, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--manifest", str(tmp_path / "m.toml"),
                           "--data", str(tmp_path / "data"), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


MANIFEST = """\
[[repo]]
name = "someone/proj"
kind = "application"
commit = "0"
paths = ["."]

[[repo]]
name = "a/b"
kind = "library"
commit = "0"
paths = ["."]
"""


def _checkouts(tmp_path):
    (tmp_path / "m.toml").write_text(MANIFEST)
    for name, files in (("someone+proj", ("train.py", "other.py")), ("a+b", ("lib.py",))):
        checkout = tmp_path / "data" / name
        checkout.mkdir(parents=True)
        for f in files:
            (checkout / f).write_text(BUGGY)


def test_halves_come_from_the_fixed_split():
    # The fixture below relies on these two names falling in different halves.
    mod = _module()
    assert mod.half("someone/proj") == "check" and mod.half("a/b") == "tune"


def test_lint_writes_a_sheet_and_summary_counts_verdicts(tmp_path):
    _checkouts(tmp_path)
    verdicts = tmp_path / "v.csv"
    verdicts.write_text("id,rule,repo,path,line,verdict,note\n"
                        "x,TRN101,someone/proj,other.py,7,yes,clears before step\n"
                        "y,TRN101,someone/proj,train.py,7,debatable,\n"
                        "z,TRN101,a/b,lib.py,7,yes,same\n")
    sheet = tmp_path / "sheet.csv"
    r = _run(tmp_path, "lint", "--sheet", str(sheet), "--verdicts", str(verdicts))
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(sheet.open()))
    assert sorted((row["rule"], row["repo"], row["half"], row["kind"], row["path"], row["sampled"], row["verdict"])
                  for row in rows) == [
        ("TRN101", "a/b", "tune", "library", "lib.py", "x", "yes"),
        ("TRN101", "someone/proj", "check", "application", "other.py", "x", "yes"),
        ("TRN101", "someone/proj", "check", "application", "train.py", "x", "debatable"),
        ("TRN301", "a/b", "tune", "library", "lib.py", "x", ""),
        ("TRN301", "someone/proj", "check", "application", "other.py", "x", ""),
        ("TRN301", "someone/proj", "check", "application", "train.py", "x", "")]  # preview rules are linted too
    assert all(">    7 " in row["context"] or ">    2 " in row["context"] for row in rows)

    r = _run(tmp_path, "summary", "--sheet", str(sheet), "--preview", "TRN301")
    assert r.returncode == 1 and "not yet triaged" in r.stderr  # the three TRN301 findings
    # debatable counts against; each half on its own, then both together
    assert "| TRN101 | default | 1 / 2 | 1 of 1 (100%) | 1 of 2 (50%) | 2 of 3 (67%) | 125.000 |" in r.stdout
    assert ("default-on (a plain lint reports them): tune: 1 of 1 (100%) worth a change, 1 findings "
            "(125.000 per 1,000 lines); check: 1 of 2 (50%) worth a change, 2 findings (125.000 per 1,000 lines); "
            "both: 2 of 3 (67%) worth a change, 3 findings (125.000 per 1,000 lines)") in r.stdout
    assert "preview-only (only --preview adds them): tune: 0 of 1 (0%) worth a change" in r.stdout
    assert "- tune half: 1 repositories (1 library, 0 application), 8 lines, 2 findings" in r.stdout
    assert "- check half: 1 repositories (0 library, 1 application), 16 lines, 4 findings" in r.stdout


def test_each_half_gets_its_own_sample(tmp_path):
    # One sampled finding per rule allowed: pooled, only the first of the three findings (a/b's) would be
    # sampled and the check half would have none; per half, each half has its first finding sampled.
    _checkouts(tmp_path)
    sheet = tmp_path / "sheet.csv"
    r = _run(tmp_path, "lint", "--sheet", str(sheet), "--verdicts", str(tmp_path / "none.csv"), "--per-rule", "1")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(sheet.open()))
    assert sorted((row["repo"], row["path"]) for row in rows if row["rule"] == "TRN101" and row["sampled"]) == [
        ("a/b", "lib.py"), ("someone/proj", "other.py")]


def test_save_verdicts_keeps_the_rows_no_longer_sampled(tmp_path):
    _checkouts(tmp_path)
    sheet = tmp_path / "sheet.csv"
    assert _run(tmp_path, "lint", "--sheet", str(sheet), "--verdicts", str(tmp_path / "none.csv")).returncode == 0
    rows = list(csv.DictReader(sheet.open()))
    for row in rows:
        row["verdict"], row["note"] = "no", "n"
    with sheet.open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    saved = tmp_path / "v.csv"
    record = "id,rule,repo,path,line,verdict,note\nold,TRN999,gone/repo,x.py,1,yes,kept\r\n"
    saved.write_bytes(record.encode())
    r = _run(tmp_path, "summary", "--sheet", str(sheet), "--preview", "TRN301", "--save-verdicts", str(saved))
    assert r.returncode == 0, r.stderr
    assert saved.read_bytes().startswith(record.encode())  # the record's rows stay byte for byte
    kept = list(csv.DictReader(saved.open(newline="")))
    assert ("TRN999", "gone/repo", "yes") in {(k["rule"], k["repo"], k["verdict"]) for k in kept}
    assert len(kept) == 1 + len(rows)

    # A verdict changed on the sheet replaces the recorded one instead of adding a second row.
    rows[0]["verdict"], rows[0]["note"] = "yes", "changed"
    with sheet.open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert _run(tmp_path, "summary", "--sheet", str(sheet), "--preview", "TRN301",
                "--save-verdicts", str(saved)).returncode == 0
    again = list(csv.DictReader(saved.open(newline="")))
    assert len(again) == len(kept)
    assert [(k["verdict"], k["note"]) for k in again if k["path"] == rows[0]["path"]
            and k["rule"] == rows[0]["rule"] and k["line"] == rows[0]["line"]] == [("yes", "changed")]


def test_a_repository_without_a_kind_is_a_clear_error(tmp_path):
    (tmp_path / "m.toml").write_text('[[repo]]\nname = "someone/proj"\ncommit = "0"\npaths = ["."]\n')
    r = _run(tmp_path, "lint", "--sheet", str(tmp_path / "s.csv"))
    assert r.returncode == 1
    assert "'someone/proj' has kind None; allowed: library, application" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_committed_manifest_is_balanced_and_avoids_the_reserved_repositories():
    mod = _module()
    repos = mod.manifest(ROOT / "benchmarks" / "precision" / "manifest.toml")
    names = [r["name"].lower() for r in repos]
    assert len(names) == len(set(names)) >= 50
    kinds = Counter(r["kind"] for r in repos)
    assert abs(kinds["library"] - kinds["application"]) <= len(repos) // 10
    halves = Counter(mod.half(r["name"]) for r in repos)
    assert min(halves.values()) >= len(repos) // 3
    reserved = ("pytorch-lightning", "fairseq", "detectron2", "open_clip", "yolov5", "pytorch-gan",
                "pytorchzerotoall", "pytorch-cifar", "morvanzhou/pytorch-tutorial", "yunjey/pytorch-tutorial")
    for name in names:
        assert not any(name == r or name.endswith("/" + r) for r in reserved), name
