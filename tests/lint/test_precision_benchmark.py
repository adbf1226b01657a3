"""benchmarks/precision/run.py: fixed sampling, verdicts carried over, per-rule summary."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
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


def test_lint_writes_a_sheet_and_summary_counts_verdicts(tmp_path):
    (tmp_path / "m.toml").write_text('[[repo]]\nname = "someone/proj"\ncommit = "0"\npaths = ["."]\n')
    checkout = tmp_path / "data" / "someone+proj"
    checkout.mkdir(parents=True)
    (checkout / "train.py").write_text(BUGGY)
    (checkout / "other.py").write_text(BUGGY)
    verdicts = tmp_path / "v.csv"
    verdicts.write_text("id,rule,repo,path,line,verdict,note\n"
                        "x,TRN101,someone/proj,other.py,7,yes,clears before step\n"
                        "y,TRN101,someone/proj,train.py,7,debatable,\n")
    sheet = tmp_path / "sheet.csv"
    r = _run(tmp_path, "lint", "--sheet", str(sheet), "--verdicts", str(verdicts))
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(sheet.open()))
    assert sorted((row["rule"], row["path"], row["sampled"], row["verdict"]) for row in rows) == [
        ("TRN101", "other.py", "x", "yes"), ("TRN101", "train.py", "x", "debatable"),
        ("TRN301", "other.py", "x", ""), ("TRN301", "train.py", "x", "")]  # preview rules are linted too
    assert all(">    7 " in row["context"] or ">    2 " in row["context"] for row in rows)

    r = _run(tmp_path, "summary", "--sheet", str(sheet), "--preview", "TRN301")
    assert r.returncode == 1 and "not yet triaged" in r.stderr  # the two TRN301 findings
    assert "| TRN101 | default | 2 | 2 | 1 | 50% | 125.000 |" in r.stdout  # debatable counts against
    assert "default-on sample (findings a plain lint reports): 1 of 2 worth a change (50%)" in r.stdout
