"""assert_step_gradients, assert_eval_mode and assert_train_mode in a real pytest session.

Each correct loop passes; each broken one fails inside the user's own call (the traceback's last
line is the user's ``optimizer.step()`` or ``model(x)``) with a message naming the cause.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.plugin.test_failure_output import failure_section, line_of

CHECKS = textwrap.dedent('''
    import pytest
    import torch
    import torch.nn.functional as F
    from torch import nn

    from pytest_torchcheck import (TorchcheckUsageError, assert_eval_mode, assert_step_gradients,
                                   assert_train_mode)

    ACCUMULATE = 3


    def make():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        return model, torch.optim.SGD(model.parameters(), lr=0.1)


    def batches():
        g = torch.Generator().manual_seed(1)
        return [(torch.randn(8, 4, generator=g), torch.randint(0, 2, (8, 1), generator=g).float())
                for _ in range(6)]


    def bce(model, batch):
        x, y = batch
        return F.binary_cross_entropy_with_logits(model(x), y)


    def loop(model, opt, kind):
        def run(data):
            for i, batch in enumerate(data):
                if kind == "clears":
                    opt.zero_grad()
                    bce(model, batch).backward()
                    opt.step()
                elif kind == "never_clears":
                    bce(model, batch).backward()
                    opt.step()
                elif kind == "clears_between_backward_and_step":
                    bce(model, batch).backward()
                    opt.zero_grad()
                    opt.step()
                elif kind == "accumulates":
                    (bce(model, batch) / ACCUMULATE).backward()
                    if (i + 1) % ACCUMULATE == 0:
                        opt.step()
                        opt.zero_grad()
                elif kind == "accumulates_sum":
                    bce(model, batch).backward()
                    if (i + 1) % ACCUMULATE == 0:
                        opt.step()
                        opt.zero_grad()
                elif kind == "accumulates_but_clears_each":
                    opt.zero_grad()
                    (bce(model, batch) / ACCUMULATE).backward()
                    if (i + 1) % ACCUMULATE == 0:
                        opt.step()
        return run


    @pytest.mark.parametrize("kind", ["clears", "never_clears", "clears_between_backward_and_step", "accumulates",
                                      "accumulates_sum", "accumulates_but_clears_each"])
    def test_step_gradients(kind):
        model, opt = make()
        assert_step_gradients(model, opt, loop(model, opt, kind), batches(), bce)


    def test_step_gradients_usage_errors():
        model, opt = make()
        with pytest.raises(TorchcheckUsageError, match="run never called SGD.step"):
            assert_step_gradients(model, opt, lambda data: list(data), batches(), bce)


    def classifier():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 2))


    def evaluate(model, x, *, switch=True, no_grad=True):
        if switch:
            model.eval()
        with torch.set_grad_enabled(not no_grad):
            return model(x).argmax(1)


    @pytest.mark.parametrize("case", ["correct", "no_eval", "no_no_grad", "ignored"])
    def test_eval_mode(case):
        model, x = classifier(), torch.randn(8, 4)
        if case == "ignored":  # a model that keeps its dropout on for MC-dropout, exempted by name
            model.eval()
            model[2].train()
            assert_eval_mode(model, evaluate, model, x, switch=False, ignore=["2"])
        else:
            assert_eval_mode(model, evaluate, model, x, switch=case != "no_eval", no_grad=case != "no_no_grad")


    @pytest.mark.parametrize("restore", [True, False])
    def test_train_mode(restore):
        model, x, y = classifier(), torch.randn(16, 4), torch.randint(0, 2, (16,))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def fit():
            model.train()
            for epoch in range(2):
                if restore:
                    model.train()
                for step in range(2):
                    opt.zero_grad()
                    F.cross_entropy(model(x), y).backward()
                    opt.step()
                evaluate(model, x)

        assert_train_mode(model, opt, fit)
''')


def message_of(result: pytest.RunResult, test: str) -> pytest.LineMatcher:
    """The ``E`` lines of ``test``'s failure section, without the ``E`` prefix."""
    lines = [line[1:] for line in failure_section(result, test) if line.startswith("E   ")]
    return pytest.LineMatcher(textwrap.dedent("\n".join(lines)).splitlines())


def test_step_gradient_and_mode_checks(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_checks=CHECKS)
    result = inner.run("--tb=auto")
    assert inner.outcomes(result) == {
        "test_step_gradients[clears]": "PASSED", "test_step_gradients[never_clears]": "FAILED",
        "test_step_gradients[clears_between_backward_and_step]": "FAILED",
        "test_step_gradients[accumulates]": "PASSED", "test_step_gradients[accumulates_sum]": "FAILED",
        "test_step_gradients[accumulates_but_clears_each]": "FAILED", "test_step_gradients_usage_errors": "PASSED",
        "test_eval_mode[correct]": "PASSED", "test_eval_mode[no_eval]": "FAILED",
        "test_eval_mode[no_no_grad]": "FAILED", "test_eval_mode[ignored]": "PASSED",
        "test_train_mode[True]": "PASSED", "test_train_mode[False]": "FAILED"}, result.stdout.str()

    step = "test_step_gradients[{}]"
    message_of(result, step.format("never_clears")).fnmatch_lines([
        "*assert_step_gradients: at optimizer step 2, .grad is not the mean gradient of the one micro-batch drawn "
        "since the previous step",
        "  worst parameter *: max abs difference *; .grad norm *, expected norm * (all parameters: * vs *; "
        "rtol=0.0001, atol=1e-06)",
        "  likely cause: the gradients of step 1 are still in .grad: zero_grad() is not called between optimizer "
        "steps*"], consecutive=True)
    message_of(result, step.format("clears_between_backward_and_step")).fnmatch_lines([
        "*at optimizer step 1,*", "*", "  likely cause: every gradient is zero or None at step(): zero_grad()*"])
    message_of(result, step.format("accumulates_sum")).fnmatch_lines([
        "*at optimizer step 1, .grad is not the mean gradient of the 3 micro-batches drawn since the previous step",
        "*", "  likely cause: the 3 micro-batch gradients are summed, not averaged*"])
    message_of(result, step.format("accumulates_but_clears_each")).fnmatch_lines([
        "*at optimizer step 1,*", "*",
        "  likely cause: only the last micro-batch's gradient is left: zero_grad() runs inside the accumulation "
        "window*"])
    message_of(result, "test_eval_mode[no_eval]").fnmatch_lines([
        "*assert_eval_mode: evaluate called 'Sequential' (Sequential) outside evaluation mode: in training mode",
        "  5 module(s) in training mode: Sequential, Sequential.0, Sequential.1, Sequential.2, Sequential.3 "
        "(BatchNorm1d, Dropout, Linear, Sequential)",
        "    likely cause: model.eval() is not called before evaluating*"], consecutive=True)
    message = message_of(result, "test_eval_mode[no_no_grad]")
    message.fnmatch_lines(["*outside evaluation mode: with autograd recording",
                           "  autograd is recording: the call is outside torch.no_grad() / torch.inference_mode()",
                           "*"], consecutive=True)
    assert "training mode" not in str(message.lines)
    message_of(result, "test_train_mode[False]").fnmatch_lines([
        "*assert_train_mode: optimizer step 3 trained Sequential with 5 module(s) in eval mode: Sequential, "
        "Sequential.0, Sequential.1, Sequential.2, Sequential.3 (BatchNorm1d, Dropout, Linear, Sequential)",
        "  likely cause: model.eval() was called (for validation, or after loading) and model.train() was not "
        "called before training resumed*"], consecutive=True)

    # Each failure ends at the user's own line, and is short.
    for test, line in [(step.format("never_clears"), "opt.step()"),
                       (step.format("accumulates_sum"), "opt.step()"),
                       ("test_eval_mode[no_eval]", "return model(x).argmax(1)"),
                       ("test_train_mode[False]", "opt.step()")]:
        block = failure_section(result, test)
        last = [text for text in block if text.strip()][-1]
        assert last.startswith("test_checks.py:") and last.endswith(": TorchcheckFailure"), "\n".join(block)
        number = int(last.split(":")[1])
        assert line in CHECKS.lstrip("\n").splitlines()[number - 1], "\n".join(block)
        assert len(block) <= 45, f"{test}: {len(block)} lines\n" + "\n".join(block)
        assert "site-packages/torch" not in "\n".join(block)
    assert line_of(CHECKS, "def test_train_mode") > 0
