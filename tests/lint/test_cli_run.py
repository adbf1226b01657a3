"""``torchcheck run`` (lint_rules/commands/run.py) as a subprocess: the program runs as ``python`` runs it,
the exit codes, ``-m``, ``--max-steps``, the formats, ``--select``/``--ignore``, usage errors, and the
clean corpus of fixtures/correct/ under the watch."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import processes

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}

# Two bugs of two checks, at lines 8 (TRN101) and 10 (TRN202); the exit code is the first argument.
BUGGY = """\
import sys
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 2)
for step in range(4):
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.zero_grad()
    opt.step()
    torch.cuda.empty_cache()
print("trained")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def torchcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return processes.run([sys.executable, "-m", "lint_rules", *args], cwd=cwd, timeout=120, env=ENV)


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


# ---------------------------------------------------------------- the program runs as python runs it
SHOW = """\
import json, os, sys
print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0], "cwd": os.getcwd(),
                  "file": __file__, "globals": sorted(globals())}))
"""


def test_the_script_sees_what_python_would_give_it(tmp_path: Path) -> None:
    write(tmp_path / "sub" / "show.py", SHOW)
    args = ["sub/show.py", "--epochs", "2", "-m", "x"]  # the program's options are its own
    python = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    watched = torchcheck("run", *args, cwd=tmp_path)
    assert watched.returncode == 0, watched.stderr
    assert json.loads(watched.stdout) == json.loads(python.stdout)
    assert json.loads(watched.stdout)["argv"] == args


def test_dash_m_runs_a_module_as_python_m_does(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "show.py", SHOW)
    python = subprocess.run([sys.executable, "-m", "pkg.show", "--lr", "1"], cwd=tmp_path, capture_output=True,
                            text=True, env=ENV)
    watched = torchcheck("run", "-m", "pkg.show", "--lr", "1", cwd=tmp_path)
    assert watched.returncode == 0, watched.stderr
    assert json.loads(watched.stdout) == json.loads(python.stdout)


def test_dash_m_reports_findings_in_the_modules_file(tmp_path: Path) -> None:
    write(tmp_path / "trainer" / "__init__.py", "")
    write(tmp_path / "trainer" / "__main__.py", BUGGY)
    r = torchcheck("run", "--select", "TRN101", "-m", "trainer", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert f"{os.path.join('trainer', '__main__.py')}:8:5: TRN101 [error]" in r.stderr


def test_an_exception_in_the_program_prints_its_traceback_from_the_program_and_exits_1(tmp_path: Path) -> None:
    # raised inside a call the watch wraps (the loss): the wrapper's frames are left out, as unwatched;
    # and torch's warning from a wrapped call (float() of a tensor that requires grad) names this line too
    write(tmp_path / "crash.py", BUGGY.replace(
        'print("trained")',
        'float(model(x).sum()); torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.tensor([7, 0]))'))
    r = torchcheck("run", "crash.py", cwd=tmp_path)
    assert r.returncode == 1
    assert f"{tmp_path / 'crash.py'}:11: UserWarning: Converting a tensor with requires_grad=True" in r.stderr
    traceback = r.stderr[r.stderr.index("Traceback"):]
    assert traceback.splitlines()[1] == f'  File "{tmp_path / "crash.py"}", line 11, in <module>'
    assert "IndexError: Target 7 is out of bounds." in traceback
    frames = [line for line in traceback.splitlines() if line.startswith('  File "')]
    assert "torch/nn/functional.py" in frames[1], traceback  # the next frame is torch's
    assert "runpy" not in traceback and "lint_rules" not in traceback and "pytest_torchcheck" not in traceback
    assert "crash.py:8:5: TRN101" in r.stderr  # the findings so far are reported too


# ---------------------------------------------------------------- exit codes and report
def test_findings_exit_1_and_are_reported_as_the_linter_reports_them(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BUGGY)
    r = torchcheck("run", "train.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stdout == "trained\n"  # the program's output stays on standard output
    lines = r.stderr.splitlines()
    assert lines[0].startswith("train.py:8:5: TRN101 [error] zero_grad() cleared 2 parameter gradients")
    assert lines[1].startswith("train.py:10:5: TRN202 [warning] torch.cuda.empty_cache() ran 4 times")
    assert lines[2].startswith("Found 2 findings at run time (4 optimizer steps watched")


def test_a_clean_program_exits_0(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BUGGY)
    r = torchcheck("run", "--ignore", "TRN101,TRN202", "train.py", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "trained\n"), r.stderr
    from pytest_torchcheck.watch.watcher import default_codes

    ran = [c for c in default_codes() if c not in ("TRN101", "TRN202")]  # every default check, less the ignored
    assert "TRN904" not in ran  # opt-in: only when selected
    assert f"No findings at run time (4 optimizer steps watched; checks: {', '.join(ran)})" in r.stderr


@pytest.mark.parametrize("exit_code", ["3", "0"])
def test_a_failing_program_keeps_its_exit_code_and_its_findings_are_printed(tmp_path: Path, exit_code: str) -> None:
    write(tmp_path / "train.py", BUGGY)
    r = torchcheck("run", "train.py", exit_code, cwd=tmp_path)
    assert r.returncode == (3 if exit_code == "3" else 1)
    assert "train.py:8:5: TRN101" in r.stderr


def test_a_string_exit_is_printed_and_exits_1(tmp_path: Path) -> None:
    write(tmp_path / "train.py", "raise SystemExit('did not train')\n")
    r = torchcheck("run", "train.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("did not train\n")


def test_json_to_an_output_file_uses_the_linters_schema(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BUGGY)
    r = torchcheck("run", "--format", "json", "--output-file", "out.json", "train.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert [(f["code"], f["line"], f["column"], f["severity"], f["confidence"]) for f in report] == [
        ("TRN101", 8, 5, "error", "certain"), ("TRN202", 10, 5, "warning", "certain")]
    lint = torchcheck("lint", "--preview", "--format", "json", "--select", "TRN101", "train.py", cwd=tmp_path)
    assert set(report[0]) == set(json.loads(lint.stdout)[0])  # the same keys, url included
    assert report[0]["url"].endswith("/rules/zero-grad-between-backward-and-step/")


def test_json_on_standard_error_parses_when_the_program_is_quiet(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BUGGY.replace('print("trained")', ""))
    r = torchcheck("run", "--format", "json", "--select", "TRN202", "train.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(r.stderr)] == ["TRN202"]


def test_select_and_ignore_choose_the_checks(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BUGGY)
    only = torchcheck("run", "--format", "concise", "--select", "TRN2", "train.py", cwd=tmp_path)
    assert [line.split()[1] for line in only.stderr.splitlines() if line.startswith("train.py:")] == ["TRN202"]
    ignored = torchcheck("run", "--format", "concise", "--ignore", "TRN202", "train.py", cwd=tmp_path)
    assert [line.split()[1] for line in ignored.stderr.splitlines() if line.startswith("train.py:")] == ["TRN101"]


# ---------------------------------------------------------------- --max-steps
FOREVER = """\
import torch
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 4), torch.randn(8, 2)
steps = 0
try:
    while True:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        steps += 1
finally:
    print(f"ran {steps} steps")
"""


def test_max_steps_ends_the_program_cleanly(tmp_path: Path) -> None:
    write(tmp_path / "train.py", FOREVER)
    r = torchcheck("run", "--max-steps", "3", "train.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ran 2 steps\n"  # the third step's hook ended it, before `steps += 1`; finally ran
    assert "stopped the program after 3 optimizer steps (--max-steps)" in r.stderr
    assert "No findings at run time (3 optimizer steps watched" in r.stderr


def test_max_steps_with_findings_exits_1(tmp_path: Path) -> None:
    write(tmp_path / "train.py", FOREVER.replace("        opt.zero_grad()\n", ""))
    r = torchcheck("run", "--max-steps", "4", "train.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "train.py:9:9: TRN102" in r.stderr


# ---------------------------------------------------------------- torchrun: every rank watched, one report
RANKS = """\
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 2)
for step in range(4):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    print(f"rank {rank} loss {loss.item():.4f}")
    if rank == 1:
        torch.cuda.empty_cache()
dist.destroy_process_group()
"""


def test_under_torchrun_every_rank_is_watched_and_rank_0_reports_for_all(tmp_path: Path) -> None:
    write(tmp_path / "train.py", RANKS)
    r = processes.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
                       "lint_rules", "run", "--format", "json", "--output-file", "out.json", "--select",
                       "TRN201,TRN202", "train.py"], cwd=tmp_path, timeout=240, env=ENV)
    # both ranks ran the program; rank 0 exits 1 for the findings, which torchrun reports as its failure
    # (the two ranks' lines may interleave on the shared standard output)
    assert sorted(re.findall(r"rank \d loss 0\.5889", r.stdout)) == [
        "rank 0 loss 0.5889", "rank 1 loss 0.5889"], r.stdout + r.stderr[-3000:]
    assert r.returncode == 1 and "exitcode  : 1" in r.stderr and "rank      : 0" in r.stderr, r.stderr[-3000:]
    report = json.loads((tmp_path / "out.json").read_text())  # one file: rank 0's, merged
    assert [(f["code"], f["line"], f["message"].rsplit(" (", 1)[1]) for f in report] == [
        ("TRN201", 17, "ranks 0, 1)"), ("TRN202", 19, "rank 1)")]
    assert report[0]["message"].startswith(".item() ran 4 times from this line")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "train.py"]


def test_ranks_the_program_spawns_itself_are_watched_in_their_processes(tmp_path: Path) -> None:
    # torch.multiprocessing.spawn: each spawned process runs its function under its own watch
    fixture = REPO / "fixtures" / "buggy" / "ddp_train__model_moved_after_wrap.py"
    r = torchcheck("run", "--format", "json", "--output-file", "out.json", "--select", "TRN804,TRN903", str(fixture),
                   cwd=tmp_path)
    assert r.returncode == 1, r.stderr[-3000:]
    report = json.loads((tmp_path / "out.json").read_text())
    source = fixture.read_text().splitlines()
    moved = next(i for i, text in enumerate(source, 1) if "# BUG" in text)
    assert [(f["code"], f["line"]) for f in report][:1] == [("TRN804", moved)]
    assert report[0]["message"].endswith("(spawned ranks 0, 1)"), report  # each rank cast its own wrapper
    # the drift that cast causes, seen by comparing the replicas after their steps: by whichever rank
    # compared after the other had stored its fingerprint, or both
    assert [f["code"] for f in report] == ["TRN804", "TRN903"]
    assert re.search(r"\(spawned ranks? (0|1|0, 1)\)$", report[1]["message"]), report


# ---------------------------------------------------------------- torch.compile: said once, not missed silently
def test_compiled_code_is_named_once_with_the_checks_that_cannot_see_inside(tmp_path: Path) -> None:
    write(tmp_path / "train.py", """\
        import torch
        model = torch.nn.Linear(4, 2)
        fast = torch.compile(model, backend="eager")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            opt.zero_grad()
            fast(torch.randn(8, 4)).sum().backward()
            opt.step()
        """)
    r = torchcheck("run", "--select", "TRN201,TRN202", "train.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if "torch.compile" in line]
    assert notes == ["torchcheck: note: the program compiled code with torch.compile at train.py:3; TRN201 cannot "
                     "see the calls made inside compiled code and may miss what happens there"]
    # checks that see through compiled code: no note
    r = torchcheck("run", "--select", "TRN202", "train.py", cwd=tmp_path)
    assert r.returncode == 0 and "torch.compile" not in r.stderr, r.stderr


# ---------------------------------------------------------------- usage errors: exit 2, nothing runs
@pytest.mark.parametrize(("args", "message"), [
    (["run", "missing.py"], "cannot run 'missing.py': no such file"),
    (["run", "-m", "no_such_module_here"], "no module named 'no_such_module_here'"),
    (["run"], "run needs a SCRIPT or -m MODULE"),
    (["run", "--select", "TRN1O1", "train.py"], "unknown rule code or prefix 'TRN1O1'"),
    (["run", "--ignore", "BAD", "train.py"], "unknown rule code or prefix 'BAD'"),
    (["run", "--max-steps", "0", "train.py"], "--max-steps: must be at least 1, got 0"),
    (["run", "--frmat", "json", "train.py"], "unrecognized arguments: --frmat"),
    (["run", "--output-file", "no/such/dir/out.json", "train.py"], "--output-file 'no/such/dir/out.json'"),
])
def test_usage_errors_exit_2_before_the_program_runs(tmp_path: Path, args: list[str], message: str) -> None:
    write(tmp_path / "train.py", 'print("ran")\n')
    r = torchcheck(*args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "ran" not in r.stdout and "Traceback" not in r.stderr


def test_the_linter_does_not_import_torch(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BUGGY)
    code = ("import sys\nfrom lint_rules import cli\ncli.main(['lint', '--no-cache', 'train.py'])\n"
            "cli.main(['rules'])\nprint('torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert r.stdout.splitlines()[-1] == "False", r.stderr


# ---------------------------------------------------------------- the clean corpus
CORRECT = REPO / "fixtures" / "correct"
# The fixtures that spawn their ranks (ddp*.py) are watched in each spawned process: they are in the corpus.
NOT_WATCHED: dict[str, str] = {}
WATCHED = sorted(p.name for p in CORRECT.glob("*.py") if p.name not in NOT_WATCHED)


def test_the_corpus_is_every_correct_fixture_but_the_spawning_ones() -> None:
    # A new fixture joins the corpus by itself; only a named exception stays out.
    assert set(NOT_WATCHED) <= {p.name for p in CORRECT.glob("*.py")}
    assert len(WATCHED) + len(NOT_WATCHED) == len(list(CORRECT.glob("*.py"))) >= 24


# The fixtures that start their own ranks run through the command itself, whose spawn watch follows them
# into their processes; the others run in one process of the corpus driver, as `torchcheck run --select ALL`
# runs each (one torch import for all of them: tests/plugin/watch_corpus/driver.py).
SPAWNING = [s for s in WATCHED if s.startswith("ddp")]
IN_ONE_PROCESS = [s for s in WATCHED if s not in SPAWNING]


@pytest.fixture(scope="module")
def watched_fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    from tests.plugin.watch_helpers import drive

    found = drive(tmp_path_factory, "cli_run_fixtures", "--all-checks", "--scripts",
                  *(str(CORRECT / name) for name in IN_ONE_PROCESS))
    return {key.split("/", 1)[1]: p for key, p in found.items()}


@pytest.mark.parametrize("script", IN_ONE_PROCESS)
def test_a_correct_fixture_runs_clean_under_the_watch(watched_fixtures: dict[str, dict], script: str) -> None:
    result = watched_fixtures[script]
    assert (result["exit_code"], result["findings"], result["errors"]) == (0, [], []), result


@pytest.mark.parametrize("script", SPAWNING)
def test_a_correct_fixture_that_spawns_its_ranks_runs_clean_under_the_watch(script: str) -> None:
    r = torchcheck("run", "--format", "json", "--output-file", os.devnull, "--select", "ALL",
                   str(CORRECT / script), cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
