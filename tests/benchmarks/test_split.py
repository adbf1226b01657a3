"""benchmarks/realbugs_mined/split.py: a repository's half is fixed by its name alone."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "realbugs_mined" / "split.py"


def _module():
    spec = importlib.util.spec_from_file_location("realbugs_mined_split", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Pinned when the split was first committed, before any candidate was mined: a change of the salt
# or the hash would move repositories between halves after triage, and must fail here.
PINNED = {
    "Spijkervet/SimCLR": "check",
    "lucidrains/DALLE-pytorch": "check",
    "a/b": "tune",
    "c/d": "tune",
    "k/l": "check",
}


def test_pinned_repositories_keep_their_half():
    half = _module().half
    assert {name: half(name) for name in PINNED} == PINNED


def test_half_ignores_case_and_surrounding_space():
    half = _module().half
    assert half("SPIJKERVET/simclr") == half(" Spijkervet/SimCLR ") == "check"


def test_halves_are_balanced_over_many_names():
    half = _module().half
    halves = [half(f"owner{i}/repo{i}") for i in range(2000)]
    assert 900 < halves.count("tune") < 1100


@pytest.mark.parametrize("bad", ["simclr", "/simclr", "owner/", "a/b/c", ""])
def test_malformed_repository_is_refused(bad):
    with pytest.raises(ValueError, match="owner/name"):
        _module().half(bad)


def test_command_line_prints_halves_and_refuses_bad_names():
    ok = subprocess.run([sys.executable, str(SCRIPT), "a/b", "k/l"], capture_output=True, text=True)
    assert ok.returncode == 0
    assert ok.stdout.splitlines() == ["tune\ta/b", "check\tk/l"]
    bad = subprocess.run([sys.executable, str(SCRIPT), "nope"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "'nope' is not of the form owner/name" in bad.stderr
    assert "Traceback" not in bad.stderr
