"""A warm, fully cached run stays small: what it imports, and the plain records it is built on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lint_rules.records import FrozenInstanceError, asdict, factory, record, replace

# Modules a cached run must not import (each costs milliseconds of a ~50 ms run, or a parse).
HEAVY = ("libcst", "dataclasses", "inspect", "typing", "shutil", "tempfile", "multiprocessing",
         "concurrent.futures", "tomllib", "xml.etree.ElementTree", "pkgutil", "lint_rules.engine")

PROBE = textwrap.dedent('''
    import contextlib, io, json, sys
    before = set(sys.modules)
    from lint_rules.cli import main
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(sys.argv[1:])
    print(json.dumps({"code": code, "new": sorted(set(sys.modules) - before)}))
''')

TRAINING = textwrap.dedent('''
    import torch

    def train(model, loader, optimizer, loss_fn):
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
''')


def test_a_warm_run_imports_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAINING)
    args = ["lint", "--isolated", "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "train.py")]

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    cold = run()
    assert cold["code"] == 1 and "libcst" in cold["new"]  # the probe sees a real lint
    warm = run()
    assert warm["code"] == 1  # the cached finding still fails the run
    assert not [m for m in HEAVY if m in warm["new"]], warm["new"]


def test_a_warm_run_checks_cross_file_dependencies_without_a_parser(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(textwrap.dedent('''
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                return self.head(x).sigmoid()
    '''))
    (tmp_path / "train.py").write_text("import torch\nfrom model import Net\n"
                                       "loss = torch.nn.BCELoss()\nout = loss(Net()(x), y)\n")
    args = ["lint", "--isolated", "--select", "TRN502", "--cache-dir", str(tmp_path / "cache"), "train.py"]

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    assert run()["code"] == 1  # TRN502 through model.py
    warm = run()
    assert warm["code"] == 1  # the cached finding, its dependency on model.py's summary checked
    assert not [m for m in HEAVY if m in warm["new"]], warm["new"]
    assert "lint_rules.analysis.project_index" in warm["new"]  # it was checked, from the summary cache


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple = ()


@record
class Bag:
    items: list = factory(list)
    name: str | None = None


def test_records_behave_like_dataclasses() -> None:
    p = Point(1, tags=("a",))
    assert p == Point(1, 0, ("a",)) and p != Point(2) and hash(Point(1)) == hash(Point(1))
    assert repr(p) == "Point(x=1, y=0, tags=('a',))"
    with pytest.raises(FrozenInstanceError):
        p.x = 3
    assert replace(p, y=5) == Point(1, 5, ("a",)) and p.y == 0
    assert Bag().items is not Bag().items  # a factory default is made per instance
    bag = Bag()
    bag.items.append(Point(2))
    bag.name = "b"
    assert asdict(bag) == {"items": [{"x": 2, "y": 0, "tags": ()}], "name": "b"}
    with pytest.raises(TypeError, match="unhashable"):
        hash(bag)
    with pytest.raises(TypeError, match="missing required argument"):
        Point()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)
    with pytest.raises(TypeError, match="has no field"):
        replace(p, z=1)
