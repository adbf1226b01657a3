"""``flake8 --select TRN`` runs the same rules with the same positions and suppressions."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SOURCE = textwrap.dedent(
    """\
    import torch
    model = torch.nn.DataParallel(model)
    other = torch.nn.DataParallel(other)  # noqa: TRN301
    third = torch.nn.DataParallel(third)  # torchcheck: ignore[TRN301]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
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
    assert [line.split(": ")[1].split()[0] for line in theirs.stdout.splitlines()] == ["TRN301", "TRN101"]


def test_flake8_select_other_codes_runs_nothing_of_ours(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    r = _run(sys.executable, "-m", "flake8", "--isolated", "--select", "E9", "train.py", cwd=tmp_path)
    assert r.returncode == 0 and "TRN" not in r.stdout
