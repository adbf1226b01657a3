"""What holds where an evaluation function is called, in its file and in the project's other files
(analysis/evaluation.py ``caller_contexts``, from the summaries' call records), and what TRN601 and
TRN602 make of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from lint_rules.analysis.cross_file import ProjectFacts
from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.project_index import index_for

REPO = Path(__file__).resolve().parents[3]

EVALUATION = textwrap.dedent("""
    import torch
    from torch import nn

    scorer = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.2))

    def evaluate(loader):
        hits = 0
        for x, y in loader:
            hits += (scorer(x).argmax(1) == y).sum().item()
        return hits

    def again(loader):
        return evaluate(loader)
""")

CALLERS = {
    "careful": "    scorer.eval()\n    with torch.no_grad():\n        evaluate(loader)\n",
    "careless": "    evaluate(loader)\n",
}


def _project(tmp_path: Path, body: str) -> Path:
    (tmp_path / "evaluation.py").write_text(EVALUATION)
    (tmp_path / "main.py").write_text(
        "import torch\nfrom evaluation import evaluate, scorer\n\n\ndef main(loader):\n" + body
        + "\n\nif __name__ == '__main__':\n    main(None)\n")
    return tmp_path / "evaluation.py"


@pytest.mark.parametrize(("caller", "expected"), [
    ("careful", [set(), {"no_grad", "eval"}]),  # again() in its own file, then main.py's call
    ("careless", [set(), set()]),
])
def test_caller_contexts_join_this_files_calls_and_the_projects(tmp_path: Path, caller, expected) -> None:
    path = _project(tmp_path, CALLERS[caller])
    model = FileModel(cst.parse_module(path.read_text()))
    model.project_facts = ProjectFacts(index_for(None), str(path))
    facts = model.fact(FileFacts)
    evaluate = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "evaluate")
    assert facts.caller_contexts(evaluate) == expected


def _lint(path: Path, *args: str) -> list[tuple[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--format", "json", "--exit-zero",
                        *args, path.name], cwd=path.parent, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return [(f["code"], f["confidence"]) for f in json.loads(r.stdout)]


def test_a_caller_in_another_file_that_sets_no_grad_and_eval_silences_both(tmp_path: Path) -> None:
    path = _project(tmp_path, CALLERS["careful"])
    assert _lint(path, "--preview") == []


def test_callers_that_never_set_eval_make_the_missing_eval_certain(tmp_path: Path) -> None:
    # every call of evaluate() in the project is known, none sets eval mode, and the model has dropout
    path = _project(tmp_path, CALLERS["careless"])
    assert _lint(path) == [("TRN601", "certain"), ("TRN602", "certain")]
