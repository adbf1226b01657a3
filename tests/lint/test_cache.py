"""The result cache (lint_rules/cache.py): a damaged, truncated or hand-edited entry is a miss, never a
crash and never a changed result; whether a file is skipped is decided from its bytes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lint_rules.cache import _seal

REPO = Path(__file__).resolve().parents[2]
GAN = Path(__file__).resolve().parent / "projects" / "gan_sigmoid"

TRAIN = """import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.zero_grad()
    opt.step()
"""

FINDING = {"path": "t.py", "line": 1, "column": 1, "end_line": 1, "end_column": 2, "code": "TRN999",
           "name": "from-the-cache", "message": "cached", "severity": "error", "cell": None, "fix": None,
           "confidence": "certain"}

# What each file's entry is replaced with: the shapes that used to raise AttributeError (exit 1 and no
# report on every run) or be trusted as they were. Sealed ones carry a matching digest, so that the check
# of the shape, not only the digest, is what turns them away.
DAMAGE = {
    "raw_null.py": "null",
    "raw_list.py": "[]",
    "raw_number.py": "42",
    "truncated.py": None,  # the first half of the real entry
    "sealed_null.py": _seal("null"),
    "sealed_list.py": _seal("[]"),
    "sealed_number.py": _seal("42"),
    "finding_not_object.py": _seal(json.dumps({"path": "finding_not_object.py", "skipped": False,
                                               "notebook_fixes": 0, "findings": [1]})),
    "finding_wrong_type.py": _seal(json.dumps({"path": "finding_wrong_type.py", "skipped": False,
                                               "notebook_fixes": 0,
                                               "findings": [{**FINDING, "line": "1"}]})),
    "deps_wrong_type.py": _seal(json.dumps({"path": "deps_wrong_type.py", "skipped": False, "notebook_fixes": 0,
                                            "findings": [], "deps": [["import", 1, 2, 3, 4]]})),
}


def lint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def entries(cache_dir: Path, kind: str = "") -> dict[str, Path]:
    """Result entries by the path they hold (``kind="summaries"``: summary entries, by file name)."""
    out = {}
    for entry in cache_dir.rglob("*.json"):
        if (entry.parent.parent.name == "summaries") != (kind == "summaries"):
            continue
        payload = json.loads(entry.read_text())["entry"]
        out[payload["path"] if kind == "" else entry.name] = entry
    return out


def test_a_damaged_entry_is_a_miss_never_a_crash_nor_another_result(tmp_path: Path) -> None:
    for name in DAMAGE:
        (tmp_path / name).write_text(TRAIN)
    first = lint("--format", "json", "--exit-zero", ".", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    stored = entries(tmp_path / ".torchcheck_cache")
    assert sorted(stored) == sorted(DAMAGE)
    for name, text in DAMAGE.items():
        stored[name].write_text(text if text is not None else stored[name].read_text()[:200])
    again = lint("--format", "json", "--exit-zero", ".", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert len(json.loads(first.stdout)) == len(DAMAGE)  # one TRN101 each
    # Each miss was linted again and its entry rewritten: the next run is served from the cache.
    assert sorted(entries(tmp_path / ".torchcheck_cache")) == sorted(DAMAGE)


def test_an_edited_entry_is_a_miss(tmp_path: Path) -> None:
    """An entry changed by hand (its findings emptied) but not sealed again is not served: the digest
    of its text no longer matches."""
    (tmp_path / "t.py").write_text(TRAIN)
    first = lint("--format", "json", "t.py", cwd=tmp_path)
    assert first.returncode == 1
    entry = entries(tmp_path / ".torchcheck_cache")["t.py"]
    entry.write_text(entry.read_text().replace('"findings": [{', '"findings": [], "x": [{'))
    again = lint("--format", "json", "t.py", cwd=tmp_path)
    assert again.returncode == 1 and json.loads(again.stdout) == json.loads(first.stdout)


def test_an_entry_saying_skipped_does_not_hide_a_linted_files_findings(tmp_path: Path) -> None:
    """"skipped": true with no findings, even sealed, is not believed of a file that mentions torch and
    does not say skip-file: skipping is decided from the file's bytes."""
    (tmp_path / "t.py").write_text(TRAIN)
    first = lint("--format", "json", "t.py", cwd=tmp_path)
    assert first.returncode == 1 and json.loads(first.stdout)
    entry = entries(tmp_path / ".torchcheck_cache")["t.py"]
    entry.write_text(_seal(json.dumps({"path": "t.py", "skipped": True, "notebook_fixes": 0, "findings": []})))
    again = lint("--format", "json", "t.py", cwd=tmp_path)
    assert again.returncode == 1 and json.loads(again.stdout) == json.loads(first.stdout)


def test_a_skip_file_is_still_served_from_the_cache(tmp_path: Path) -> None:
    """The other side of the check above: a file that does say skip-file keeps its cached skip (a planted
    finding in its entry shows the entry was used)."""
    (tmp_path / "t.py").write_text("# torchcheck: skip-file\n" + TRAIN)
    assert lint("t.py", cwd=tmp_path).returncode == 0
    entry = entries(tmp_path / ".torchcheck_cache")["t.py"]
    entry.write_text(_seal(json.dumps({"path": "t.py", "skipped": True, "notebook_fixes": 0, "findings": [FINDING]})))
    assert "TRN999" in lint("t.py", cwd=tmp_path).stdout


def test_a_damaged_module_summary_is_summarised_again(tmp_path: Path) -> None:
    """A cached summary of an imported module with the right keys but values of other types (sealed or
    not) is a miss: the rule that reads it (TRN502 here) neither crashes (TRN001) nor changes its verdict."""
    root = tmp_path / "proj"
    shutil.copytree(GAN, root)
    args = ("--cache-dir", str(tmp_path / "cache"), "--select", "TRN502", "--format", "json", "gan/train.py")
    first = lint(*args, cwd=root)
    assert [f["code"] for f in json.loads(first.stdout)] == ["TRN502"], first.stdout + first.stderr
    wrong = {"classes": {"Discriminator": "sigmoid"}, "functions": [], "instances": 1, "imports": {"nn": 0},
             "stepping": {}}
    for seal in (True, False):
        for entry in entries(tmp_path / "cache", "summaries").values():
            entry.write_text(_seal(json.dumps(wrong)) if seal else json.dumps({"digest": "0" * 64, "entry": wrong}))
        for entry in entries(tmp_path / "cache").values():
            entry.unlink()  # so that train.py is linted again and its rule reads the summary
        again = lint(*args, cwd=root)
        assert again.returncode == 1 and again.stderr == "", again.stderr
        assert json.loads(again.stdout) == json.loads(first.stdout)
