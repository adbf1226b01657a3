"""assert_eval_mode(require_no_grad=False) checks the mode alone: a fix that only adds ``model.eval()``
passes, a missing ``eval()`` still fails naming training mode, and the default still demands both.
"""

from __future__ import annotations

import textwrap

import pytest

MODE_ONLY = textwrap.dedent('''
    import pytest
    import torch
    from torch import nn

    from pytest_torchcheck import TorchcheckUsageError, assert_eval_mode


    def classifier():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 2))


    def evaluate_eval_only(model, x):
        model.eval()  # the fix adds eval(); autograd still records
        return model(x).argmax(1)


    def evaluate_no_eval(model, x):
        return model(x).argmax(1)


    def test_eval_only_passes_mode_only_check():
        model = classifier()
        assert_eval_mode(model, evaluate_eval_only, model, torch.randn(8, 4), require_no_grad=False)


    def test_no_eval_fails_mode_only_check():
        model = classifier()
        assert_eval_mode(model, evaluate_no_eval, model, torch.randn(8, 4), require_no_grad=False)


    def test_eval_only_fails_default_check():
        model = classifier()
        assert_eval_mode(model, evaluate_eval_only, model, torch.randn(8, 4))


    def test_require_no_grad_not_a_bool():
        model = classifier()
        with pytest.raises(TorchcheckUsageError, match=r"require_no_grad must be True .* or False .*, got 'no'"):
            assert_eval_mode(model, evaluate_eval_only, model, torch.randn(8, 4), require_no_grad="no")
''')


def test_mode_only_check(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_mode_only=MODE_ONLY)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_eval_only_passes_mode_only_check": "PASSED", "test_no_eval_fails_mode_only_check": "FAILED",
        "test_eval_only_fails_default_check": "FAILED", "test_require_no_grad_not_a_bool": "PASSED"}, \
        result.stdout.str()
    message = inner.message(result, "test_no_eval_fails_mode_only_check")
    message.fnmatch_lines([
        "*assert_eval_mode: evaluate_no_eval called 'Sequential' (Sequential) outside evaluation mode: "
        "in training mode",
        "  5 module(s) in training mode: *"], consecutive=True)
    assert "autograd" not in "\n".join(message.lines)  # the grad mode is not what this check was asked about
    inner.message(result, "test_eval_only_fails_default_check").fnmatch_lines([
        "*assert_eval_mode: evaluate_eval_only called 'Sequential' (Sequential) outside evaluation mode: "
        "with autograd recording",
        "  autograd is recording: the call is outside torch.no_grad() / torch.inference_mode()"], consecutive=True)
