"""One file, one answer: the same findings, positions and suppressions through every front end.

The reference implementations (fixtures/), two files with suppression comments and a notebook are
linted through ``lint_rules.api``, the command line (a subprocess, JSON output), flake8 (a
subprocess) and ``pytest --torchcheck-lint`` (pytester); each front end must report exactly what
the API reports for the files it sees (flake8 and pytest see Python files only).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lint_rules.api import Settings, lint_file, lint_paths, lint_text

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

# (path, line, column, code, message); a notebook's line is within its cell, which the path carries.
Key = tuple

SUPPRESSED = textwrap.dedent('''\
    import torch

    model = torch.nn.DataParallel(model)  # noqa: TRN301
    other = torch.nn.DataParallel(other)
    third = torch.nn.DataParallel(third)  # noqa
    fourth = torch.nn.DataParallel(fourth)  # torchcheck: ignore[TRN301]
    fifth = torch.nn.DataParallel(fifth)  # noqa: TRN101
''')

LOOP = textwrap.dedent('''\
    import torch


    def train(model, loader, opt):
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            opt.zero_grad()  # torchcheck: ignore[TRN999]
            opt.step()
            print(loss.item())  # noqa: TRN201
''')


def notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": src.splitlines(keepends=True)} for src in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("front_ends")
    (root / "pyproject.toml").write_text("[tool.torchcheck]\npreview = true\n")
    for kind in ("correct", "buggy"):
        for src in sorted((REPO / "fixtures" / kind).glob("*.py")):
            shutil.copy(src, root / f"{kind}__{src.name}")
    (root / "suppressed.py").write_text(SUPPRESSED)
    (root / "loop.py").write_text(LOOP)
    (root / "cells.ipynb").write_text(notebook("import torch\n", "# a comment\nm = torch.nn.DataParallel(m)\n"
                                               "n = torch.nn.DataParallel(n)  # noqa: TRN301\n"))
    # Load every module a lint needs now, before pytester snapshots sys.modules: its restore would drop
    # the ones first imported inside a test, and later tests would meet a second copy of each rule class.
    list(lint_paths([root], Settings.resolve(root, jobs=1)))
    return root


def key(path: str, cell: int | None, line: int, column: int, code: str, message: str) -> Key:
    return (path if cell is None else f"{path}:cell {cell}", line, column, code, message)


def via_api(root: Path, monkeypatch: pytest.MonkeyPatch) -> set[Key]:
    monkeypatch.chdir(root)
    # In process, one worker: pytester's sys.modules snapshot would leave a pool's pickled classes stale;
    # the command line below lints the same files with a process pool.
    settings = Settings.resolve(jobs=1)
    results = list(lint_paths(["."], settings))
    assert [r.path for r in results] == sorted(r.path for r in results)  # a stable order
    assert not [r.error for r in results if r.error]
    return {key(f.path, f.cell, f.line, f.column, f.code, f.message) for r in results for f in r.findings}


def via_cli(root: Path) -> set[Key]:
    proc = subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--format", "json", "--exit-zero", "--no-cache",
                           "."], cwd=root, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {key(f["path"], f.get("cell"), f["line"], f["column"], f["code"], f["message"])
            for f in json.loads(proc.stdout)}


def via_flake8(root: Path) -> set[Key]:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "TRN", "--jobs", "1", "."],
                          cwd=root, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1) and not proc.stderr, proc.stderr
    found = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"^(?:\./)?(.+?):(\d+):(\d+): (TRN\d+) \[(?:error|warning)\] (.*)$", line)
        assert m, line
        found.add(key(m[1], None, int(m[2]), int(m[3]), m[4], m[5]))
    return found


def via_pytest(root: Path, pytester: pytest.Pytester) -> set[Key]:
    for path in root.iterdir():
        if path.is_file():
            shutil.copy(path, pytester.path / path.name)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                           "--torchcheck-lint", "--tb=short", timeout=300)
    found = set()
    for line in result.outlines:
        m = re.match(r"^(\S+\.py):(\d+):(\d+): (TRN\d+) (.*)$", line)
        if m:
            found.add(key(m[1], None, int(m[2]), int(m[3]), m[4], m[5]))
    assert result.ret in (0, 1), result.outlines[-20:]
    return found


def python_only(found: set[Key]) -> set[Key]:
    return {k for k in found if ".ipynb" not in k[0]}


def test_every_front_end_reports_what_the_api_reports(corpus: Path, pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    api = via_api(corpus, monkeypatch)
    # The corpus exercises what it should: many rules, the notebook, and each kind of suppression.
    assert len({k[3] for k in api}) >= 30 and len(api) >= 45
    assert {k[:4] for k in api if k[0] == "suppressed.py"} == {("suppressed.py", 4, 9, "TRN301"),
                                                               ("suppressed.py", 7, 9, "TRN301")}
    assert [k[1:4] for k in api if k[0] == "cells.ipynb:cell 2"] == [(2, 5, "TRN301")]
    assert [k[1:4] for k in api if k[0] == "loop.py"] == [(8, 9, "TRN101")]

    assert via_cli(corpus) == api
    assert via_flake8(corpus) == python_only(api)
    assert via_pytest(corpus, pytester) == python_only(api)


def test_lint_text_and_lint_file_agree_with_lint_paths(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(corpus)
    settings = Settings.resolve(jobs=1)
    for result in lint_paths(["."], settings):
        path = Path(result.path)
        assert lint_file(path, settings) == result
        text = lint_text(path.read_text(encoding="utf-8"), result.path, settings)
        assert text.findings == result.findings or result.skipped


def test_settings_resolve_like_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchcheck]\nselect = ["TRN3"]\nunsafe-fixes = true\n'
                                             '[tool.torchcheck.per-file-ignores]\n"gen/*" = ["TRN301"]\n')
    settings = Settings.resolve(tmp_path, extend_select=["TRN101"], ignore=["TRN302"], preview=True, fix=True)
    assert "TRN101" in settings.codes and "TRN302" not in settings.codes and "TRN301" in settings.codes
    assert settings.fix == "unsafe" and settings.unsafe_fixes and settings.cache_dir is None
    assert "TRN301" not in settings.codes_for(tmp_path / "gen" / "x.py")
    assert "TRN301" in settings.codes_for(tmp_path / "x.py")
    source = "import torch\nm = torch.nn.DataParallel(m)\n"
    assert lint_text(source, tmp_path / "gen" / "x.py", settings).findings == []
    assert [f.code for f in lint_text(source, tmp_path / "x.py", settings).findings] == ["TRN301"]


def test_bad_settings_name_the_value(tmp_path: Path) -> None:
    from lint_rules.errors import TorchcheckError

    with pytest.raises(TorchcheckError, match="TRN9x"):
        Settings.resolve(tmp_path, select=["TRN9x"])


def test_an_unreadable_file_is_a_result_with_an_error(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"import torch\nx = '\xe9'\n")
    result = lint_file(tmp_path / "latin.py", Settings.resolve(tmp_path, isolated=True), shown="latin.py")
    assert result.findings == [] and "cannot decode latin.py" in result.error
    missing = lint_file(tmp_path / "gone.py", Settings.resolve(tmp_path, isolated=True), shown="gone.py")
    assert missing.error.startswith("cannot read gone.py")


def test_each_file_is_read_hashed_and_looked_up_once(corpus: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from lint_rules import cache

    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(f"import torch\nm{i} = torch.nn.DataParallel(m)\n")
    reads: list[str] = []
    loads: list[str] = []
    keys: list[str] = []
    from lint_rules import api

    real_read, real_load, real_key = api.read_regular, cache.load, cache.key
    monkeypatch.setattr(api, "read_regular", lambda path: reads.append(Path(path).name) or real_read(path))
    monkeypatch.setattr(cache, "load", lambda *a, **k: loads.append(a[1]) or real_load(*a, **k))
    monkeypatch.setattr(cache, "key", lambda *a, **k: keys.append(a[1]) or real_key(*a, **k))
    monkeypatch.chdir(tmp_path)
    settings = Settings.resolve(isolated=True, preview=True, cache_dir=tmp_path / "cache", jobs=1)
    cold = list(lint_paths(["."], settings))
    assert [r.path for r in cold] == ["m0.py", "m1.py", "m2.py"] and all(r.findings for r in cold), cold
    assert sorted(reads) == ["m0.py", "m1.py", "m2.py"] and len(loads) == 3 and len(keys) == 3  # misses: once each
    reads.clear(), loads.clear(), keys.clear()
    assert list(lint_paths(["."], settings)) == cold  # warm: every file answered by the cache
    assert sorted(reads) == ["m0.py", "m1.py", "m2.py"] and len(loads) == 3 and len(keys) == 3
