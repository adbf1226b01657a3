"""The result cache across files: a file's entry is stale when the summary of a module it
imports changes, and only then."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lint_rules import api
from lint_rules.analysis.project_index import index_for
from lint_rules.config import Config

REPO = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "projects" / "gan_sigmoid"
CODES = ("TRN501", "TRN502", "TRN503", "TRN504")


def copy_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(PROJECT, root)
    return root


def settings(cache_dir: Path) -> api.Settings:
    return api.Settings.resolve(config=Config(), select=CODES, cache_dir=cache_dir)


def cached(path: Path, cache_dir: Path):
    """What the cache answers for ``path`` without linting it (None: a miss)."""
    answer = api._prepare(path, settings(cache_dir), str(path))
    return answer if isinstance(answer, api.FileResult) else None


def lint(path: Path, cache_dir: Path):
    return api.lint_file(path, settings(cache_dir), shown=str(path))


def codes_of(result) -> list[str]:
    return [f.code for f in result.findings]


def test_comment_edit_keeps_dependents_cached_and_a_new_last_layer_does_not(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    cache_dir = tmp_path / "cache"
    model, train = root / "gan/model.py", root / "gan/train.py"
    assert cached(train, cache_dir) is None
    assert codes_of(lint(train, cache_dir)) == ["TRN502"]
    assert codes_of(cached(train, cache_dir)) == ["TRN502"]  # warm: a hit

    # A comment (and a blank line) in model.py: its summary is the same, train.py stays cached.
    model.write_text("# the discriminator\n\n" + model.read_text())
    hit = cached(train, cache_dir)
    assert hit is not None and codes_of(hit) == ["TRN502"]

    # An unrelated new module changes nothing either.
    (root / "gan/data.py").write_text("import torch\nclass Net(torch.nn.Module):\n    pass\n")
    assert cached(train, cache_dir) is not None

    # The model's last activation goes: train.py's entry is stale and the new verdict is quiet.
    model.write_text(model.read_text().replace("return self.out(self.body(x))", "return self.body(x)"))
    assert cached(train, cache_dir) is None
    assert codes_of(lint(train, cache_dir)) == []
    assert codes_of(cached(train, cache_dir)) == []

    # ... and back: the sigmoid returns, so does the finding.
    model.write_text(model.read_text().replace("return self.body(x)", "return self.out(self.body(x))"))
    assert cached(train, cache_dir) is None
    assert codes_of(lint(train, cache_dir)) == ["TRN502"]


def test_an_import_that_resolves_elsewhere_invalidates(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    cache_dir = tmp_path / "cache"
    train = root / "gan/train.py"
    train.write_text(train.read_text().replace("from .model import Discriminator", "from gan.model import Discriminator"))
    assert codes_of(lint(train, cache_dir)) == ["TRN502"]
    assert cached(train, cache_dir) is not None
    # A module next to train.py now shadows the package (the script directory comes first).
    (root / "gan/gan").mkdir()
    (root / "gan/gan/model.py").write_text("from torch import nn\nclass Discriminator(nn.Module):\n"
                                           "    def forward(self, x):\n        return x\n")
    assert cached(train, cache_dir) is None
    assert codes_of(lint(train, cache_dir)) == []


def test_summaries_are_cached_by_content(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    cache_dir = tmp_path / "cache"
    train = root / "gan/train.py"
    lint(train, cache_dir)
    stored = list((cache_dir).rglob("summaries/*/*.json"))
    assert len(stored) == 1 and json.loads(stored[0].read_text())["entry"]["classes"]["Discriminator"]["output"] == "sigmoid"


def cli(root: Path, cache_dir: Path) -> list[tuple[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--isolated", "--cache-dir", str(cache_dir),
                        "--select", "TRN502", "--format", "json", "--exit-zero", "gan/train.py"],
                       cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return [(f["path"], f["code"]) for f in json.loads(r.stdout)]


def test_cli_runs_with_a_cache_see_the_other_file_change(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    cache_dir = tmp_path / "cache"
    model = root / "gan/model.py"
    assert cli(root, cache_dir) == [("gan/train.py", "TRN502")]
    assert cli(root, cache_dir) == [("gan/train.py", "TRN502")]  # from the cache
    model.write_text(model.read_text().replace("self.out(self.body(x))", "self.body(x)"))
    assert cli(root, cache_dir) == []  # only train.py was named, yet the edit of model.py counts


HIERARCHY = Path(__file__).resolve().parent / "projects" / "epochloop"


def test_a_base_class_result_follows_its_subclasses_in_other_files(tmp_path: Path) -> None:
    """engine/runner.py's TRN801 rests on what every subclass's run_epoch() does, read from loops/: a change
    of what one does, or a new subclass, re-lints it; a comment in a subclass does not."""
    root = tmp_path / "proj"
    shutil.copytree(HIERARCHY, root)
    cache_dir = tmp_path / "cache"
    chosen = api.Settings.resolve(config=Config(), select=("TRN801",), cache_dir=cache_dir)
    runner, distill = root / "engine/runner.py", root / "loops/distill.py"

    def hit():
        answer = api._prepare(runner, chosen, str(runner))
        return answer if isinstance(answer, api.FileResult) else None

    def run():
        return codes_of(api.lint_file(runner, chosen, shown=str(runner)))

    assert run() == ["TRN801"] and hit() is not None
    (root / "loops/supervised.py").write_text("# supervised epochs\n" + (root / "loops/supervised.py").read_text())
    assert hit() is not None  # a comment: the summary is the same

    text = distill.read_text()
    distill.write_text(text.replace("            self.optimizer.step()\n", "            self.log(loss)\n"))
    assert hit() is None and run() == []  # one implementation no longer steps: the call may not
    distill.write_text(text)
    assert hit() is None and run() == ["TRN801"]

    (root / "loops/probe.py").write_text("from engine.runner import EpochRunner\n\n\nclass Probe(EpochRunner):\n"
                                         "    def run_epoch(self, epoch):\n        return self.model.eval()\n")
    index_for(str(cache_dir)).forget_files()  # which files import what is read once a run: a new run
    assert hit() is None and run() == []  # a new subclass that trains nothing
