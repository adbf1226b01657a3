"""The preview tier, as Ruff's: off by default, on with --preview / preview = true, or by exact code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lint_rules import registry
from lint_rules.config import load
from lint_rules.errors import ConfigError

# TRN202 (preview, no certain core: empty_cache() in the loop is often a deliberate trade) and
# TRN101 (default).
SOURCE = """\
import torch
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x)
    loss.backward()
    opt.zero_grad()
    opt.step()
    torch.cuda.empty_cache()
"""


def _codes(tmp_path, *args: str, config: str | None = None) -> list[str]:
    (tmp_path / "train.py").write_text(SOURCE)
    if config is not None:
        (tmp_path / "pyproject.toml").write_text(config)
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--format", "json", *args,
                        "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    return [f["code"] for f in json.loads(r.stdout)]


def test_trn301_is_a_preview_rule():
    assert registry.is_preview("TRN202") and not registry.is_preview("TRN101")


def test_lint_source_without_codes_runs_the_default_tier():
    """The Python API with no selection runs what ``torchcheck lint`` runs with none: preview off;
    every rule when asked for by code."""
    from lint_rules import lint_source

    assert [f.code for f in lint_source(SOURCE, "train.py").findings] == ["TRN101"]
    every = lint_source(SOURCE, "train.py", registry.default_codes(preview=True)).findings
    assert sorted(f.code for f in every) == ["TRN101", "TRN202"]


@pytest.mark.parametrize(("args", "config", "expected"), [
    ((), None, ["TRN101"]),                                        # preview rules are off by default
    (("--select", "ALL"), None, ["TRN101"]),                       # ALL means the default tier ...
    (("--select", "TRN2"), None, []),                              # ... and so does a prefix
    (("--preview",), None, ["TRN101", "TRN202"]),                  # --preview turns them on
    (("--select", "TRN2", "--preview"), None, ["TRN202"]),
    (("--select", "TRN202"), None, ["TRN202"]),                    # an exact code selects it anyway
    (("--extend-select", "TRN202"), None, ["TRN101", "TRN202"]),
    ((), "[tool.torchcheck]\npreview = true\n", ["TRN101", "TRN202"]),
    (("--no-preview",), "[tool.torchcheck]\npreview = true\n", ["TRN101"]),  # the flag wins
    ((), '[tool.torchcheck]\nextend-select = ["TRN202"]\n', ["TRN101", "TRN202"]),
    (("--preview", "--ignore", "TRN202"), None, ["TRN101"]),
])
def test_preview_selection(tmp_path, args, config, expected):
    assert _codes(tmp_path, *args, config=config) == expected


def test_rules_lists_the_tier(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lint_rules", "rules", "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    tiers = {e["code"]: e["preview"] for e in json.loads(r.stdout)}
    assert tiers["TRN202"] is True and tiers["TRN101"] is False
    text = subprocess.run([sys.executable, "-m", "lint_rules", "rules"], capture_output=True, text=True,
                          timeout=60).stdout
    assert next(ln for ln in text.splitlines() if ln.startswith("TRN202")).split()[3] == "preview"
    assert next(ln for ln in text.splitlines() if ln.startswith("TRN101")).split()[3] == "default"


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]"])
def test_bad_preview_value_is_named(tmp_path, value):
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.torchcheck]\npreview = {value}\n")
    with pytest.raises(ConfigError) as e:
        load(path)
    assert "preview" in str(e.value) and "true or false" in str(e.value) and str(path) in str(e.value)


def test_bad_preview_value_exits_2_without_traceback(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchcheck]\npreview = "on"\n')
    (tmp_path / "train.py").write_text(SOURCE)
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "train.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "preview" in r.stderr and "'on'" in r.stderr


def test_text_output_shows_severity(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--preview", "train.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("train.py:6:5: TRN101 [error] ")
    assert lines[1].startswith("train.py:8:5: TRN202 [warning] ")


# TRN602 is a preview rule with a certain core: `scorer` is forgotten by an evaluation that switched
# `encoder` (certain); `evaluate` sets no mode at all (possible: a caller may have set it).
CONFIDENCE_SOURCE = """\
import torch
from torch.utils.data import DataLoader

def fit(encoder, scorer, loader, opt):
    encoder.train()
    scorer.train()
    for x, y in loader:
        opt.zero_grad()
        scorer(encoder(x)).sum().backward()
        opt.step()

@torch.no_grad()
def test(encoder, scorer, edges, size):
    encoder.eval()
    h = encoder(edges)
    for perm in DataLoader(range(len(edges)), size):
        scorer(h[perm])

@torch.no_grad()
def evaluate(model, val_loader):
    for x, y in val_loader:
        model(x)
"""


@pytest.mark.parametrize(("args", "expected"), [
    ((), [(16, "certain")]),  # by default: the certain finding only
    (("--select", "TRN6"), [(16, "certain")]),  # a prefix without --preview: the same
    (("--preview",), [(16, "certain"), (21, "possible")]),
    (("--select", "TRN602"), [(16, "certain"), (21, "possible")]),  # selected by its code: everything
    (("--ignore", "TRN602"), []),
])
def test_a_preview_rule_reports_its_certain_findings_by_default(tmp_path, args, expected):
    (tmp_path / "evaluate.py").write_text(CONFIDENCE_SOURCE)
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--no-cache", "--format", "json",
                        *args, "evaluate.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    found = [(f["line"], f["confidence"]) for f in json.loads(r.stdout) if f["code"] == "TRN602"]
    assert found == expected, r.stdout


def test_the_certain_core_is_a_subset_of_the_preview_tier_and_runs_by_default():
    assert "TRN602" in registry.CERTAIN_CORE and registry.is_preview("TRN602")
    assert "TRN602" in registry.default_codes() and not registry.hidden_by_default("TRN602")
    assert registry.hidden_by_default("TRN202")
    assert registry.exact_codes(["trn602", "TRN6", "ALL"]) == {"TRN602"}
