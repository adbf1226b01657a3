"""Each runtime check passes its correct reference and catches its buggy twin, in a real pytest session.

A buggy twin names the checks that must catch it on a ``Plugin check:`` line of
its docstring. For every (twin, check) pair, ``SCENARIOS`` holds the body of a
test that imports a fixture module (``mod``) from its path and calls the check.
For each twin, ``pytester`` writes those tests, parametrized over the correct
reference and the buggy twin, and runs them in one subprocess session. The
reference must pass; the twin must fail with the check's message, pointing at
the planted bug (module or parameter name), and with the torchcheck report
section.

The fixture modules expose ``build_model()``, ``make_batch()``,
``make_optimizer(model)``, ``compute_loss(model, batch)`` and
``train_step(model, optimizer, batch)``; see ``fixtures/correct/*.py``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import pytest_torchcheck
from tests.test_fixtures import BUGGY, FIXTURES, ROOT, plugin_checks

# The runtime checks that issue 3 requires a reference and a buggy twin for.
REQUIRED_CHECKS = frozenset({
    "assert_gradcheck", "nan_guard", "assert_grad_flow", "assert_modules_registered", "assert_params_update",
    "assert_optimizer_covers", "assert_overfits", "assert_batch_independent", "assert_deterministic",
    "assert_loss_at_init",
})


@dataclass(frozen=True)
class Scenario:
    body: str  # test body; ``mod`` is the fixture module under test
    expected: tuple[str, ...]  # fnmatch patterns the twin's failure must show, in order; '[' is literal
    marker: str = ""


SCENARIOS: dict[tuple[str, str], Scenario] = {
    ("swish__wrong_backward", "assert_gradcheck"): Scenario(
        """
        from pytest_torchcheck import assert_gradcheck

        inputs, _ = mod.make_batch()
        assert_gradcheck(mod.swish, inputs)
        """,
        ("*assert_gradcheck: gradients of Swish.apply are wrong",
         "*worst entry: d output 0[*] / d input 0[*]",
         "*analytic  = *",
         "*numerical = * (analytic/numerical = *)")),
    ("log_scale__log_of_zero", "nan_guard"): Scenario(
        """
        model, batch = mod.build_model(), mod.make_batch()
        mod.train_step(model, mod.make_optimizer(model), batch)
        """,
        ("*nan_guard: forward output of module 'LogScaleNet.log_scale' (LogScale) is not finite",
         "*output: shape (32, 32), 0 NaN, * Inf of 1024 elements",
         "*likely cause: LogScale.forward produced them from finite inputs*"),
        marker="@pytest.mark.nan_guard"),
    ("two_branch__detached_branch", "assert_grad_flow"): Scenario(
        """
        from pytest_torchcheck import assert_grad_flow

        model, batch = mod.build_model(), mod.make_batch()
        assert_grad_flow(model, lambda: mod.compute_loss(model, batch))
        """,
        ("*assert_grad_flow: 2 of 6 trainable parameters have a gradient problem (shortcut.weight, shortcut.bias)",
         "*shortcut.weight *None*not connected to the loss*",
         "*shortcut.bias *None*not connected to the loss*")),
    ("layer_stack__plain_list_of_layers", "assert_modules_registered"): Scenario(
        """
        from pytest_torchcheck import assert_modules_registered

        assert_modules_registered(mod.build_model())
        """,
        ("*assert_modules_registered: 1 unregistered member(s) in MLPStack:",
         "*MLPStack.layers: plain list holding 3 Module(s); use nn.ModuleList*")),
    ("encoder_head__head_missing_from_optimizer", "assert_params_update"): Scenario(
        """
        from pytest_torchcheck import assert_params_update

        model, batch = mod.build_model(), mod.make_batch()
        optimizer = mod.make_optimizer(model)
        assert_params_update(model, optimizer, lambda: mod.train_step(model, optimizer, batch))
        """,
        ("*assert_params_update: 2 trainable parameter(s) did not update:",
         "*head.weight (4, 32): non-zero gradient, unchanged; not in any optimizer parameter group",
         "*head.bias (4,): non-zero gradient, unchanged; not in any optimizer parameter group")),
    ("encoder_head__head_missing_from_optimizer", "assert_optimizer_covers"): Scenario(
        """
        from pytest_torchcheck import assert_optimizer_covers

        model = mod.build_model()
        assert_optimizer_covers(model, mod.make_optimizer(model))
        """,
        ("*assert_optimizer_covers: 2 trainable parameter(s) of EncoderHead are in no parameter group of SGD*",
         "*head.weight (4, 32)",
         "*head.bias (4,)")),
    ("train_step__zero_grad_between_backward_and_step", "assert_overfits"): Scenario(
        """
        from pytest_torchcheck import assert_overfits

        model, batch = mod.build_model(), mod.make_batch()
        optimizer = mod.make_optimizer(model)
        assert_overfits(model, batch, None, steps=100,
                        train_step=lambda b: mod.train_step(model, optimizer, b))
        """,
        ("*assert_overfits: loss on one fixed batch did not fall below * in 100 steps (first *, best *, last *)",
         "*curve: *",
         "*likely cause: gradients never reach the parameters (zero_grad between backward and step*")),
    ("conv_flatten__view_mixes_batch", "assert_batch_independent"): Scenario(
        """
        from pytest_torchcheck import assert_batch_independent

        inputs, _ = mod.make_batch()
        assert_batch_independent(mod.build_model().eval(), inputs)
        """,
        ("*assert_batch_independent: output 0 of sample * depends on the input of sample *; "
         "samples are mixed across the batch dimension",
         "*likely cause: a view/reshape/transpose that moves the batch dimension*")),
    ("noisy_dropout__unseeded_generator", "assert_deterministic"): Scenario(
        """
        from pytest_torchcheck import assert_deterministic

        model = mod.build_model()
        inputs, _ = mod.make_batch()
        assert_deterministic(lambda: model(inputs), model=model)
        """,
        ("*assert_deterministic: run 1 and run 2 differ in output (32, 4): *",
         "*seeded each run with 0; likely cause: randomness that the global seed does not control*")),
    ("head_init__large_final_layer_weights", "assert_loss_at_init"): Scenario(
        """
        from pytest_torchcheck import assert_loss_at_init

        model, batch = mod.build_model(), mod.make_batch()
        with torch.no_grad():
            loss = mod.compute_loss(model, batch)
        assert_loss_at_init(loss, num_classes=mod.CLASSES)
        """,
        ("*assert_loss_at_init: loss at initialisation is *, expected ln(10) = 2.3026 within 20%*",
         "*likely cause: the logits start too large*")),
}

HEADER = '''
import importlib.util

import pytest
import torch

PATHS = {{"correct": {correct!r}, "buggy": {buggy!r}}}


@pytest.fixture(params=sorted(PATHS))
def mod(request):
    spec = importlib.util.spec_from_file_location("fixture_under_test", PATHS[request.param])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
'''

TEST = '''

{marker}
def test_{check}(mod):
{body}
'''

# The inner sessions need only torchcheck; other plugins cost start-up time in each subprocess.
_QUIET_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:xdist")

TWINS = [path for path in BUGGY if plugin_checks(path)]
PAIRS = [(path, check) for path in TWINS for check in plugin_checks(path)]


def _pattern(text: str) -> str:
    """fnmatch pattern with ``*``/``?`` as wildcards and ``[`` taken literally."""
    return text.replace("[", "[[]")


def _failure_section(result: pytest.RunResult, test: str) -> pytest.LineMatcher:
    """The lines of ``test``'s entry in the FAILURES section (traceback, message, report sections)."""
    lines = result.outlines
    header = f" {test} "
    start = next((i for i, line in enumerate(lines) if line.startswith("_") and line.strip("_") == header), None)
    assert start is not None, f"no failure section for {test}:\n" + "\n".join(lines)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("____", "===="))), len(lines))
    return pytest.LineMatcher(lines[start + 1:end])


def test_every_plugin_check_is_a_public_assertion() -> None:
    for path, check in PAIRS:
        assert check in pytest_torchcheck.__all__ and hasattr(pytest_torchcheck, check), (
            f"{path.relative_to(ROOT)}: 'Plugin check: {check}' is not exported by pytest_torchcheck "
            f"(exports: {', '.join(pytest_torchcheck.__all__)})")


def test_every_required_check_has_a_buggy_twin() -> None:
    declared = {check for _, check in PAIRS}
    missing = sorted(REQUIRED_CHECKS - declared)
    assert not missing, (f"no buggy twin declares 'Plugin check: {', '.join(missing)}'; add "
                         f"fixtures/buggy/<case>__<bug>.py and its scenario in {Path(__file__).name}")


def test_every_declared_check_has_a_scenario() -> None:
    declared = {(path.stem, check) for path, check in PAIRS}
    missing = sorted(declared - set(SCENARIOS))
    stale = sorted(set(SCENARIOS) - declared)
    assert not missing, f"twins declare checks that SCENARIOS has no entry to run: {missing}"
    assert not stale, f"SCENARIOS entries for twins or checks no fixture declares: {stale}"


@pytest.mark.parametrize("path", TWINS, ids=[p.stem for p in TWINS])
def test_checks_pass_reference_and_catch_twin(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                              path: Path) -> None:
    # A check without a scenario fails test_every_declared_check_has_a_scenario; run the others.
    checks = [c for c in plugin_checks(path) if (path.stem, c) in SCENARIOS]
    if not checks:
        pytest.skip(f"no scenario for {path.stem}; test_every_declared_check_has_a_scenario fails")
    correct = FIXTURES / "correct" / f"{path.stem.partition('__')[0]}.py"
    source = HEADER.format(correct=str(correct), buggy=str(path))
    for check in checks:
        scenario = SCENARIOS[(path.stem, check)]
        source += TEST.format(check=check, marker=scenario.marker,
                              body=textwrap.indent(textwrap.dedent(scenario.body).strip(), "    "))
    pytester.makepyfile(**{f"test_{path.stem}": source})
    for name in ("TORCHCHECK_SEED", "TORCHCHECK_DEVICES", "TORCHCHECK_NAN_GUARD"):
        monkeypatch.delenv(name, raising=False)  # the inner session runs on defaults, whatever the caller's shell

    result = pytester.runpytest_subprocess(*_QUIET_PLUGINS, "-rfp", timeout=120)

    outcome = result.parseoutcomes()
    assert (outcome.get("passed"), outcome.get("failed")) == (len(checks), len(checks)), (
        f"expected the reference to pass and the twin to fail each of {checks}, got {outcome}\n"
        + str(result.stdout))
    for check in checks:
        result.stdout.fnmatch_lines([f"PASSED *::test_{check}[[]correct[]]*"])
        result.stdout.fnmatch_lines([f"FAILED *::test_{check}[[]buggy[]]*"])
        section = _failure_section(result, f"test_{check}[buggy]")
        section.fnmatch_lines([f"E *TorchcheckFailure: {check}: *"])
        section.fnmatch_lines([_pattern(line) for line in SCENARIOS[(path.stem, check)].expected])
        section.fnmatch_lines(["*- torchcheck -*", "seed: *", f"rerun: cd * && python -m pytest *test_{check}?buggy?*"])
