"""The first runtime checks of ``torchcheck run`` (pytest_torchcheck/watch/checks/), run in process (as
the command runs a program: tests/plugin/watch_helpers.py) on a small buggy program and on its fixed twin: the bug is reported at the user's line with the linter's code,
the twin runs clean. Near misses (correct programs that look like the bugs) run clean too."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.plugin.watch_helpers import Watched, line_of, watch_program
from tests.test_fixtures import bug_lines, expected_codes

REPO = Path(__file__).resolve().parents[2]

HEAD = """\
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x, y = torch.randn(16, 4), torch.randn(16, 2)
"""


def run_watch(tmp_path: Path, source: str, **kwargs) -> Watched:
    """The program run under every check, in this process (as ``torchcheck run train.py`` runs it)."""
    return watch_program(tmp_path, source, **kwargs)


# code, the buggy program (the line to report carries "# <-"), its fixed twin, words the message must have
CASES = {
    "TRN101": (HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.zero_grad()  # <-
    opt.step()
""", HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
""", ["cleared 4 parameter gradients", "step() at line 10", "all 4 gradients None"]),
    "TRN102": (HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()  # <-
""", HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
""", ["4 of 4 parameter gradients were never cleared", "1 backward() call added"]),
    "TRN107": (HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward(retain_graph=True)  # <-
    opt.step()
""", HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
""", ["retain_graph=True", "after 1 optimizer step, did not go through it"]),
    "TRN202": (HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    torch.cuda.empty_cache()  # <-
""", HEAD + """\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
torch.cuda.empty_cache()
""", ["ran 4 times", "each of 4 consecutive optimizer steps (of 4)"]),
    "TRN203": (HEAD + """\
for step in range(4):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)  # <-
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
""", HEAD + """\
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(4):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
""", ["Adam constructed here 3 times", "same 4 parameters", "each earlier one took 1 step", "exp_avg, exp_avg_sq"]),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_the_bug_is_reported_at_the_users_line_with_the_linters_code(tmp_path: Path, code: str) -> None:
    buggy, _, words = CASES[code]
    r = run_watch(tmp_path, buggy, select=[code])
    assert (r.code, r.errors) == (0, [])
    [finding] = r.findings
    assert (finding.code, finding.path, finding.line) == (code, "train.py", line_of(buggy, "# <-"))
    text = textwrap.dedent(buggy).splitlines()[finding.line - 1]
    call = "torch.optim.Adam(" if code == "TRN203" else text.strip()[:8]
    assert finding.column == text.index(call) + 1  # where the user's call starts, not torch's
    assert finding.confidence == "certain"
    for word in words:
        assert word in finding.message


@pytest.mark.parametrize("code", sorted(CASES))
def test_the_fixed_twin_runs_clean(tmp_path: Path, code: str) -> None:
    _, fixed, _ = CASES[code]
    r = run_watch(tmp_path, fixed)
    assert (r.code, r.findings, r.errors) == (0, [], [])


NEAR_MISSES = HEAD + """\
import torch.nn.functional as F

def mse(out):
    return F.mse_loss(out, y)

# Gradient accumulation: four backward calls, one step, one clear.
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(3):
    for micro in range(4):
        part = slice(micro * 4, (micro + 1) * 4)
        (F.mse_loss(model(x[part]), y[part]) / 4).backward()
    opt.step()
    opt.zero_grad()

# Gradients reset by hand, the old ways, and through the module.
for reset in ("data", "zero", "none", "module"):
    for step in range(3):
        mse(model(x)).backward()
        opt.step()
        for p in model.parameters():
            if reset == "data":
                p.grad.data.zero_()
            elif reset == "zero":
                p.grad.zero_()
            elif reset == "none":
                p.grad = None
        if reset == "module":
            model.zero_grad()

# A GAN-like pair: the second loss's backward also reaches the first model's parameters, whose
# optimizer clears them before its own next backward.
head = torch.nn.Linear(2, 1)
opt_head = torch.optim.Adam(head.parameters(), lr=0.01)
opt_body = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(3):
    opt_head.zero_grad()
    head(model(x).detach()).mean().backward()
    opt_head.step()
    opt_body.zero_grad()
    (-head(model(x)).mean()).backward()
    opt_body.step()

# retain_graph=True for a second backward through a shared trunk before the step.
for step in range(3):
    opt.zero_grad()
    hidden = model(x)
    hidden.pow(2).mean().backward(retain_graph=True)
    mse(hidden).backward()
    opt.step()

# empty_cache once per epoch of several steps; a new optimizer per trial of a sweep that re-initialises
# the model, many steps each; a stateless optimizer rebuilt every step (nothing to lose).
for lr in (0.1, 0.01, 0.001):
    for layer in model:
        if hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(3):
        opt.zero_grad()
        mse(model(x)).backward()
        opt.step()
    torch.cuda.empty_cache()
for step in range(4):
    plain = torch.optim.SGD(model.parameters(), lr=0.01)
    plain.zero_grad()
    mse(model(x)).backward()
    plain.step()

# Steps that see no gradient because nothing ran backward since the clear are not a TRN101.
opt.zero_grad()
opt.step()
print("near misses done")
"""


def test_near_misses_run_clean(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    r = run_watch(tmp_path, NEAR_MISSES, select=sorted(CASES))
    assert (r.code, r.findings, r.errors) == (0, [], [])
    assert "near misses done" in capsys.readouterr().out


def test_a_bug_inside_a_helper_of_another_file_is_reported_in_that_file(tmp_path: Path) -> None:
    # The user's innermost frame: the helper's zero_grad() line in trainlib.py, not torch's and not the caller's.
    r = run_watch(tmp_path, HEAD + """\
from trainlib import train_step
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    train_step(model, opt, torch.nn.functional.mse_loss, x, y)
""", files={"trainlib.py": """\
        def train_step(model, opt, loss_fn, x, y):
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.zero_grad()
            opt.step()
        """})
    assert r.code == 0
    assert [(f.code, f.path, f.line, f.column) for f in r.findings] == [("TRN101", "trainlib.py", 4, 5)]


def test_each_check_reports_a_call_site_once(tmp_path: Path) -> None:
    buggy = CASES["TRN102"][0].replace("range(4)", "range(12)")
    r = run_watch(tmp_path, buggy, select=sorted(CASES))
    assert [f.code for f in r.findings] == ["TRN102"]


def test_checks_use_the_linters_codes_names_and_severities() -> None:
    from lint_rules import registry
    from pytest_torchcheck.watch.watcher import check_class, codes

    assert set(CASES) <= set(codes())
    for code in codes():
        check = check_class(code)
        if code in registry.rule_codes():  # the rule's pitfall, watched
            rule = registry.lookup(code)
            assert (check.NAME, check.SEVERITY) == (rule.NAME, rule.SEVERITY), code
            assert not check.SUMMARY and not check.DOC, f"{code}: the rule's page documents it"
        else:  # a runtime-only code: documented as a rule is
            assert code.startswith("TRN9") and check.NAME and check.SUMMARY, code
            assert "## What it does" in check.documentation() and "## Example" in check.documentation(), code
            assert check.NAME not in {r.NAME for r in registry.all_rules().values()}, code
        assert check.observed().startswith("Observed"), code


def test_an_optimizer_rebuilt_every_epoch_while_training_goes_on_is_reported(tmp_path: Path) -> None:
    source = HEAD + """\
for epoch in range(4):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # <-
    for i in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[i::5]), y[i::5]).backward()
        opt.step()
"""
    r = run_watch(tmp_path, source, select=["TRN203"])
    [finding] = r.findings
    assert (finding.code, finding.line) == ("TRN203", line_of(source, "# <-"))
    assert "SGD constructed here 3 times" in finding.message
    assert "each earlier one took 5 steps" in finding.message
    assert "(momentum_buffer)" in finding.message


def test_an_optimizer_class_of_the_users_is_reported_where_it_is_built(tmp_path: Path) -> None:
    # Its own __init__ (super().__init__ runs torch's) is the innermost user frame: the site is the
    # line that builds it, not the class body.
    source = HEAD + """\
class Momentum(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                buf = self.state[p].setdefault("buf", torch.zeros_like(p))
                buf.mul_(0.9).add_(p.grad)
                p.add_(buf, alpha=-group["lr"])

for step in range(4):
    opt = Momentum(model.parameters())  # <-
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""
    r = run_watch(tmp_path, source, select=["TRN203"])
    assert [(f.code, f.line, f.column) for f in r.findings] == [("TRN203", line_of(source, "# <-"), 11)]
    assert "Momentum constructed here 3 times" in r.findings[0].message


# The buggy reference fixtures whose planted bug is one a runtime check watches for (their "Expected
# codes:" line names its code): the bug is reported with that code at the line marked "# BUG", and
# nothing else is. The watch and the linter agree on the line.
BUGGY_FIXTURES = sorted(p for p in (REPO / "fixtures" / "buggy").glob("*.py")
                        if expected_codes(p) & set(CASES))


def test_the_buggy_fixtures_with_a_watched_bug_are_the_expected_ones() -> None:
    assert len(BUGGY_FIXTURES) >= 9


@pytest.mark.parametrize("path", BUGGY_FIXTURES, ids=[p.name for p in BUGGY_FIXTURES])
def test_a_buggy_fixture_is_caught_at_its_bug_line(tmp_path: Path, path: Path) -> None:
    r = run_watch(tmp_path, path.read_text(encoding="utf-8"), select=sorted(CASES), name=path.name)
    got = {(f.code, f.line) for f in r.findings}
    lines = bug_lines(path.read_text(encoding="utf-8"))
    assert got and {code for code, _ in got} == expected_codes(path) & set(CASES), got
    assert {line for _, line in got} <= lines, (got, lines)


def test_a_check_that_watches_forward_says_it_cannot_see_compiled_code() -> None:
    # A compiled region runs its modules' forwards as one graph: forward hooks and the functions called
    # inside forward are not seen there, and torchcheck run must say so rather than miss silently.
    from pytest_torchcheck.watch.watcher import check_class, codes

    for code in codes():
        check = check_class(code)
        watches_forward = any(hasattr(check, name) for name in ("on_forward_pre", "on_forward_post"))
        if watches_forward:
            assert check.SEES_COMPILED is False, code
