"""The runtime checks of ``torchcheck run`` in pytest (pytest_torchcheck/watch/plugin.py, pytest_form.py): the
``torchcheck_watch`` marker, fixture and option, in real pytest sessions. A project's own ``train()``,
called from a test, is watched as it runs, with no monkeypatching; a finding fails the test with the
linter's line for it, and torch is restored after every test, passed, failed or raised.

Each pytester run costs a torch import, so one session runs many inner tests and the outer tests read its
outcome per test."""

from __future__ import annotations

import re
import textwrap

import pytest

from tests.plugin.conftest import Inner

# The project under test: its training functions build their own optimizer and pop their batch's labels, as a
# real loop over a DataLoader does; each bug has a fixed twin.
PROJECT = '''\
import torch
import torch.nn.functional as F


class Loader:
    """Fresh dict batches at each pass, as a DataLoader hands them out."""

    def __init__(self, n=3):
        g = torch.Generator().manual_seed(0)
        self.data = [(torch.randn(4, 3, generator=g), torch.randn(4, 1, generator=g)) for _ in range(n)]

    def __iter__(self):
        for x, y in self.data:
            yield {"x": x.clone(), "labels": y.clone()}


def train(model, loader, epochs=1):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for batch in loader:
            opt.zero_grad()
            labels = batch.pop("labels")
            F.mse_loss(model(batch["x"]), labels).backward()
            opt.step()


def train_cleared_too_late(model, loader, epochs=1):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for batch in loader:
            labels = batch.pop("labels")
            F.mse_loss(model(batch["x"]), labels).backward()
            opt.zero_grad()  # TRN101
            opt.step()


def train_never_cleared(model, loader, epochs=1):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for batch in loader:
            labels = batch.pop("labels")
            F.mse_loss(model(batch["x"]), labels).backward()
            opt.step()  # TRN102


def train_until_the_data_breaks(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, batch in enumerate(loader):
        opt.zero_grad()
        labels = batch.pop("labels")
        F.mse_loss(model(batch["x"]), labels).backward()
        opt.step()
        if i == 1:
            raise ValueError("the data ran out")
'''

TESTS = '''\
import pytest
import torch
import torch.optim.optimizer as optim_module

import train
from pytest_torchcheck.watch.watcher import check_class


def entry_points():
    return {
        "Optimizer.__init__": vars(torch.optim.Optimizer)["__init__"],
        "Optimizer.zero_grad": vars(torch.optim.Optimizer)["zero_grad"],
        "Module.zero_grad": vars(torch.nn.Module)["zero_grad"],
        "autograd.backward": torch.autograd.backward,
        "cuda.empty_cache": torch.cuda.empty_cache,
        "step pre hooks": dict(optim_module._global_optimizer_pre_hooks),
        "step post hooks": dict(optim_module._global_optimizer_post_hooks),
    }


BEFORE = entry_points()  # at collection, before any test was watched


def model():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 1)


@pytest.mark.torchcheck_watch
def test_marker_catches_the_bug():
    train.train_cleared_too_late(model(), train.Loader(), epochs=2)


@pytest.mark.torchcheck_watch
def test_marker_fixed_twin():
    train.train(model(), train.Loader(), epochs=2)


def test_fixture_own_optimizer_popped_batch(torchcheck_watch):
    loader = train.Loader()
    with torchcheck_watch(select="TRN101, TRN102"):
        train.train_never_cleared(model(), loader, epochs=2)


def test_fixture_fixed_twin(torchcheck_watch):
    with torchcheck_watch(select=["TRN1"]) as watcher:
        train.train(model(), train.Loader(), epochs=2)
    assert watcher.events.steps == 6 and watcher.findings == []


def test_fixture_runs_only_the_selected_checks(torchcheck_watch):
    with torchcheck_watch(select=["TRN2"]):
        train.train_cleared_too_late(model(), train.Loader())


@pytest.mark.torchcheck_watch(ignore="TRN102")
def test_marker_sets_the_codes_of_the_fixtures_blocks(torchcheck_watch):
    with torchcheck_watch():
        train.train_never_cleared(model(), train.Loader(), epochs=2)


@pytest.mark.torchcheck_watch(select="TRN102")
def test_a_test_with_the_fixture_is_watched_in_its_blocks_only(torchcheck_watch):
    train.train_never_cleared(model(), train.Loader(), epochs=2)
    with torchcheck_watch(select="TRN101"):
        train.train(model(), train.Loader())


@pytest.mark.torchcheck_watch(select="TRN9x")
def test_bad_code():
    pass


@pytest.mark.torchcheck_watch(selct="TRN1")
def test_bad_keyword():
    pass


@pytest.mark.torchcheck_watch("yes")
def test_bad_enabled():
    pass


@pytest.mark.torchcheck_watch(ignore=101)
def test_bad_type():
    pass


def test_fixture_bad_code(torchcheck_watch):
    with torchcheck_watch(select="TRN9x"):
        pass


def test_paths_are_relative_to_where_pytest_ran(torchcheck_watch, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with torchcheck_watch(select="TRN101"):
        train.train_cleared_too_late(model(), train.Loader())


@pytest.mark.torchcheck_watch
def test_the_body_raises():
    train.train_until_the_data_breaks(model(), train.Loader())


@pytest.mark.torchcheck_watch
def test_the_body_fails_too():
    train.train_cleared_too_late(model(), train.Loader())
    assert False, "the loss did not fall"


def test_fixture_block_raises(torchcheck_watch):
    with torchcheck_watch():
        train.train_until_the_data_breaks(model(), train.Loader())


def test_a_check_that_raises_is_a_warning(torchcheck_watch, monkeypatch):
    def broken(self, optimizer):
        raise RuntimeError("a bug in a check")

    monkeypatch.setattr(check_class("TRN101"), "on_step_pre", broken)
    with torchcheck_watch(select="TRN101"):
        train.train_cleared_too_late(model(), train.Loader())


def test_a_selection_of_no_runtime_check_warns(torchcheck_watch):
    with torchcheck_watch(select="TRN000") as watcher:  # a code of the linter's alone
        train.train_cleared_too_late(model(), train.Loader())
    assert watcher.checks == []


def test_zz_torch_is_restored_after_every_test():
    assert entry_points() == BEFORE
    assert not hasattr(torch.optim.Optimizer.zero_grad, "__torchcheck_original__")
'''


BAD_BLOCK = 'with torchcheck_watch(select="TRN9x"):'


def _line(source: str, text: str) -> int:
    [n] = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    return n


def _frames(section: str) -> list[str]:
    """The traceback entries of a ``--tb=short`` failure section."""
    return re.findall(r"^\S+:\d+: in \S+", section, re.M)


def _section(result: pytest.RunResult, test: str) -> str:
    """Everything pytest printed for ``test``'s failure, up to the next test's header."""
    out = result.stdout.str()
    start = re.search(rf"^_+ (ERROR at setup of )?{re.escape(test)} _+$", out, re.M)
    assert start is not None, out
    end = re.search(r"^(_{3,} \S.* _{3,}|={3,} .* ={3,})$", out[start.end():], re.M)
    return out[start.end():start.end() + end.start()] if end else out[start.end():]


@pytest.fixture
def clean(inner: Inner, monkeypatch: pytest.MonkeyPatch) -> Inner:
    """``inner``, without the outer session's TORCHCHECK_WATCH."""
    monkeypatch.delenv("TORCHCHECK_WATCH", raising=False)
    return inner


def test_marker_fixture_and_their_errors(clean: Inner) -> None:
    clean.pytester.makepyfile(train=PROJECT, test_watched=TESTS)
    result = clean.run()
    assert Inner.outcomes(result) == {
        "test_marker_catches_the_bug": "FAILED",
        "test_marker_fixed_twin": "PASSED",
        "test_fixture_own_optimizer_popped_batch": "FAILED",
        "test_fixture_fixed_twin": "PASSED",
        "test_fixture_runs_only_the_selected_checks": "PASSED",
        "test_marker_sets_the_codes_of_the_fixtures_blocks": "PASSED",
        "test_a_test_with_the_fixture_is_watched_in_its_blocks_only": "PASSED",
        "test_bad_code": "ERROR",
        "test_bad_keyword": "ERROR",
        "test_bad_enabled": "ERROR",
        "test_bad_type": "ERROR",
        "test_fixture_bad_code": "FAILED",
        "test_paths_are_relative_to_where_pytest_ran": "FAILED",
        "test_the_body_raises": "FAILED",
        "test_the_body_fails_too": "FAILED",
        "test_fixture_block_raises": "FAILED",
        "test_a_check_that_raises_is_a_warning": "PASSED",
        "test_a_selection_of_no_runtime_check_warns": "PASSED",
        "test_zz_torch_is_restored_after_every_test": "PASSED",
    }, result.stdout.str()

    # The marker: the finding at the project's line, with the linter's code, as the linter prints it; the
    # failure ends at the test's def line and carries the torchcheck section.
    trn101 = _line(PROJECT, "# TRN101")
    Inner.message(result, "test_marker_catches_the_bug").fnmatch_lines([
        "*TorchcheckFailure: torchcheck_watch: 1 finding while test_watched.py::test_marker_catches_the_bug ran "
        "(6 optimizer steps watched; checks: TRN101, TRN102, *)",
        f"  train.py:{trn101}:13: TRN101 [[]error] zero_grad() cleared 2 parameter gradients after backward() *",
        "  TRN101: https://torchcheck.readthedocs.io/en/latest/rules/zero-grad-between-backward-and-step/",
        "  to leave a check out: @pytest.mark.torchcheck_watch(ignore=['TRN101'])",
    ])
    section = _section(result, "test_marker_catches_the_bug")
    assert _frames(section) == [f"test_watched.py:{_line(TESTS, 'def test_marker_catches_the_bug')}: in "
                                f"test_marker_catches_the_bug"]
    assert "rerun: cd " in result.stdout.str()

    # The fixture: a loop that builds its own optimizer and pops its batch's labels, watched as it runs.
    trn102 = _line(PROJECT, "# TRN102")
    Inner.message(result, "test_fixture_own_optimizer_popped_batch").fnmatch_lines([
        f"*torchcheck_watch: 1 finding while the block at test_watched.py:{_line(TESTS, 'TRN101, TRN102')} in "
        "test_watched.py::test_fixture_own_optimizer_popped_batch ran (6 optimizer steps watched; "
        "checks: TRN101, TRN102)",
        f"  train.py:{trn102}:13: TRN102 [[]error] *",
        "  to leave a check out: torchcheck_watch(ignore=['TRN102'])",
    ])
    block = _line(TESTS, "TRN101, TRN102")
    assert _frames(_section(result, "test_fixture_own_optimizer_popped_batch")) == [
        f"test_watched.py:{block}: in test_fixture_own_optimizer_popped_batch"]  # ends at the user's with line

    # A test that changed the working directory: the finding's path is still relative to where pytest ran.
    Inner.message(result, "test_paths_are_relative_to_where_pytest_ran").fnmatch_lines([
        f"  train.py:{trn101}:13: TRN101 [[]error] *"])

    # Bad arguments: one line naming the test, the value and what is allowed; no traceback.
    for test, words in {
        "test_bad_code": ["@pytest.mark.torchcheck_watch on test_watched.py::test_bad_code: unknown rule code or "
                          "prefix 'TRN9x' in select='TRN9x'", "use ALL, a prefix such as TRN1",
                          "the runtime checks are TRN101, TRN102"],
        "test_bad_keyword": ["test_watched.py::test_bad_keyword: unknown keyword 'selct'; valid keywords: enabled, "
                             "select, ignore"],
        "test_bad_enabled": ["test_bad_enabled: enabled='yes' must be True or False"],
        "test_bad_type": ["test_bad_type: ignore=101: expected codes or prefixes as a list of strings or one "
                          "comma-separated string"],
        "test_fixture_bad_code": [f"torchcheck_watch(...) at test_watched.py:{_line(TESTS, BAD_BLOCK)} in "
                                  "test_watched.py::test_fixture_bad_code: unknown rule code or prefix 'TRN9x'"],
    }.items():
        section = _section(result, test)
        for word in words:
            assert word in section, (test, word, section)
        assert "Traceback" not in section and "pytest_torchcheck/" not in section, section

    # A body that raises: its own failure, nothing to report from the watch (the loop was right).
    section = _section(result, "test_the_body_raises")
    assert "ValueError: the data ran out" in section and "torchcheck_watch:" not in section
    # A body that fails after a watched bug: the findings win, the body's failure is printed above them.
    section = _section(result, "test_the_body_fails_too")
    order = ["AssertionError: the loss did not fall", "direct cause", "torchcheck_watch: 1 finding",
             "the test also failed (shown above): AssertionError: the loss did not fall"]
    assert [section.index(text) for text in order] == sorted(section.index(text) for text in order), section
    assert f"train.py:{trn101}:13: TRN101" in section
    section = _section(result, "test_fixture_block_raises")
    assert "ValueError: the data ran out" in section and "torchcheck_watch:" not in section

    # A check that raised is a warning; the test passed.
    # Each warning is shown at the test's with line, not at torchcheck's.
    result.stdout.fnmatch_lines([f"*test_watched.py:{_line(TESTS, 'broken)') + 1}: "
                                 "WatchCheckWarning: torchcheck_watch: a runtime check failed and was skipped "
                                 "while the block at test_watched.py:* ran: TRN101: RuntimeError: a bug in a check",
                                 f"*test_watched.py:{_line(TESTS, 'TRN000')}: WatchCheckWarning: "
                                 "torchcheck_watch(...) at test_watched.py:* in test_watched.py::"
                                 "test_a_selection_of_no_runtime_check_warns: select='TRN000' selects no runtime "
                                 "check, so nothing is watched; the runtime checks are TRN101, TRN102, *"])


def test_the_option_watches_every_test_under_xdist_and_a_marker_opts_out(clean: Inner) -> None:
    inner = clean
    inner.pytester.makeini("[pytest]\ntorchcheck_watch = true\n")
    inner.pytester.makepyfile(train=PROJECT, test_all=textwrap.dedent('''
        import pytest
        import torch

        import train


        def test_unmarked_is_watched():
            train.train_cleared_too_late(torch.nn.Linear(3, 1), train.Loader())


        @pytest.mark.torchcheck_watch(False)
        def test_opted_out():
            train.train_cleared_too_late(torch.nn.Linear(3, 1), train.Loader())


        def test_clean():
            train.train(torch.nn.Linear(3, 1), train.Loader())
    '''))
    result = inner.run("-n", "2")
    assert Inner.outcomes(result) == {"test_unmarked_is_watched": "FAILED", "test_opted_out": "PASSED",
                                      "test_clean": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["created: 2/2 workers"])
    Inner.message(result, "test_unmarked_is_watched").fnmatch_lines([
        "*torchcheck_watch: 1 finding while test_all.py::test_unmarked_is_watched ran *",
        f"  train.py:{_line(PROJECT, '# TRN101')}:13: TRN101 [[]error] *",
        "  to leave a check out: @pytest.mark.torchcheck_watch(ignore=['TRN101']); not to watch this test: "
        "@pytest.mark.torchcheck_watch(False)",
    ])
    # The ini setting is in the rerun command, so the failure reproduces without it.
    result.stdout.fnmatch_lines(["rerun: cd * && python -m pytest test_all.py::test_unmarked_is_watched "
                                 "--torchcheck-seed=0 --torchcheck-watch"])


def test_the_option_imports_no_torch_for_a_suite_without_it(clean: Inner) -> None:
    inner = clean
    inner.pytester.makepyfile(test_plain='''
        import sys


        def test_plain():
            assert "torch" not in sys.modules
    ''')
    result = inner.run("--torchcheck-watch")
    assert Inner.outcomes(result) == {"test_plain": "PASSED"}, result.stdout.str()


def test_the_pytest_form_selects_what_torchcheck_run_selects() -> None:
    # One answer for both: the default checks leave the opt-in ones out (TRN904 scans every output).
    from pytest_torchcheck.watch.pytest_form import selection
    from pytest_torchcheck.watch.watcher import default_codes

    assert selection(None, None, "test_x") == default_codes() and "TRN904" not in default_codes()
    assert selection("TRN904", None, "test_x") == ["TRN904"]  # selected by code, it runs
    assert selection("TRN9", "TRN903", "test_x") == ["TRN901", "TRN902", "TRN904"]
