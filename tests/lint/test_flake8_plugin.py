"""``flake8 --select TRN`` runs the same rules with the same positions and suppressions."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SOURCE = textwrap.dedent(
    """\
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        model = torch.nn.DataParallel(model)
        other = torch.nn.DataParallel(other)  # noqa: TRN301
        third = torch.nn.DataParallel(third)  # torchcheck: ignore[TRN301]
        for x in loader:
            loss = model(x)
            loss.backward()
            opt.zero_grad()
            opt.step()
    """
)


def _run(*cmd: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_flake8_matches_torchcheck(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    ours = _run(sys.executable, "-m", "lint_rules", "lint", "--format", "concise", "--isolated", "train.py",
                cwd=tmp_path)
    theirs = _run(sys.executable, "-m", "flake8", "--isolated", "--select", "TRN", "train.py", cwd=tmp_path)
    assert ours.returncode == 1 and theirs.returncode == 1, theirs.stderr
    assert theirs.stdout.splitlines() == ours.stdout.splitlines()
    # line 4's DataParallel is certain (the model is wrapped again every epoch); 5 and 6 are suppressed
    assert [line.split(": ")[1].split()[0] for line in theirs.stdout.splitlines()] == ["TRN301", "TRN101"]


LOADS = "import torch\nstate = torch.load(path)\nmodel = torch.nn.DataParallel(model)\n"


def test_flake8_applies_the_project_config_and_torch_bound(tmp_path):
    """The nearest [tool.torchcheck] (here: preview on) and the project's torch bound apply through
    flake8 as through `torchcheck lint`: TRN701 depends on whether torch < 2.6 is supported."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(LOADS)
    for bound, expected in (("torch>=2.6", ["TRN301"]), ("torch>=2.1", ["TRN701", "TRN301"])):
        (tmp_path / "pyproject.toml").write_text(
            f'[project]\nname = "p"\ndependencies = ["{bound}"]\n[tool.torchcheck]\npreview = true\n')
        ours = _run(sys.executable, "-m", "lint_rules", "lint", "--no-cache", "--format", "concise",
                    "pkg/train.py", cwd=tmp_path)
        theirs = _run(sys.executable, "-m", "flake8", "--isolated", "--select", "TRN", "pkg/train.py",
                      cwd=tmp_path)
        assert theirs.stdout.splitlines() == ours.stdout.splitlines(), (bound, theirs.stderr)
        assert [line.split(": ")[1].split()[0] for line in theirs.stdout.splitlines()] == expected, bound


def test_flake8_names_a_bad_configuration_instead_of_crashing(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchcheck]\npreview = "yes"\n')
    (tmp_path / "train.py").write_text(LOADS)
    r = _run(sys.executable, "-m", "flake8", "--isolated", "--select", "TRN", "train.py", cwd=tmp_path)
    assert "Traceback" not in r.stderr
    assert "TRN001 torchcheck configuration error" in r.stdout and "preview" in r.stdout and "'yes'" in r.stdout


def test_flake8_select_other_codes_runs_nothing_of_ours(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    r = _run(sys.executable, "-m", "flake8", "--isolated", "--select", "E9", "train.py", cwd=tmp_path)
    assert r.returncode == 0 and "TRN" not in r.stdout


def test_flake8_names_valid_python_torchcheck_cannot_analyse(tmp_path):
    """LibCST cannot read ``(x): int = 1`` though CPython can: one TRN001 note on the file, no
    traceback and no TRN000 syntax error."""
    (tmp_path / "train.py").write_text("import torch\n(x): int = 1\n")
    r = _run(sys.executable, "-m", "flake8", "--isolated", "--select", "TRN", "train.py", cwd=tmp_path)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith("train.py:1:1: TRN001 torchcheck could not analyse this file: cannot lint train.py"), \
        r.stdout
    assert "TRN000" not in r.stdout
