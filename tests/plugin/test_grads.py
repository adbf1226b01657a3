"""assert_step_gradients on correct loops that a naive re-run of the loss misjudges, and their buggy twins.

A random forward (functional dropout, sampled noise), ``clip_grad_norm_`` between backward and step,
and a loop that pops from its dict batch are all correct training; each passes. The same loops with a
real bug (zero_grad between backward and step, no zero_grad at all) still fail, naming that bug.
"""

from __future__ import annotations

import textwrap

import pytest

LOOPS = textwrap.dedent('''
    import random

    import pytest
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.nn.utils import clip_grad_norm_  # bound before the check runs: still followed

    from pytest_torchcheck import TorchcheckUsageError, assert_step_gradients


    class NoisyNet(nn.Module):
        """Functional dropout that follows the module's mode, plus Gaussian noise on the hidden layer."""

        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(4, 16), nn.Linear(16, 1)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            h = h + 0.1 * torch.randn_like(h) if self.training else h
            return self.fc2(F.dropout(h, 0.3, training=self.training))


    class PythonNoiseNet(NoisyNet):
        """Noise from Python's RNG, which no replay of torch's RNG state reproduces."""

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)) * (1 + random.random()))


    def make(cls=NoisyNet):
        torch.manual_seed(0)
        model = cls() if cls is not None else nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.3), nn.Linear(16, 1))
        return model, torch.optim.SGD(model.parameters(), lr=0.1)


    def pairs():
        g = torch.Generator().manual_seed(1)
        return [(torch.randn(8, 4, generator=g), torch.randint(0, 2, (8, 1), generator=g).float())
                for _ in range(4)]


    def dicts():
        return [{"x": x, "labels": y} for x, y in pairs()]


    def bce(model, batch):
        x, y = batch
        return F.binary_cross_entropy_with_logits(model(x), y)


    def bce_of_dict(model, batch):
        return F.binary_cross_entropy_with_logits(model(batch["x"]), batch["labels"])


    def train(model, opt, clears=True, between=False, clip=None, accumulate=1, scale=1.0):
        def run(data):
            for epoch in range(2):
                for i, batch in enumerate(data):
                    if clears and i % accumulate == 0:
                        opt.zero_grad()
                    (bce(model, batch) * scale / accumulate).backward()
                    if (i + 1) % accumulate:
                        continue
                    if between:
                        opt.zero_grad()
                    if clip is not None:
                        clip(model.parameters(), max_norm=0.05)
                    opt.step()
        return run


    @pytest.mark.parametrize("cls", [NoisyNet, None], ids=["functional", "module"])
    def test_random_forward(cls):
        model, opt = make(cls)
        assert_step_gradients(model, opt, train(model, opt), pairs(), bce)


    def test_random_forward_accumulates():
        model, opt = make()
        assert_step_gradients(model, opt, train(model, opt, accumulate=2), pairs(), bce)


    def test_random_forward_zero_grad_before_step():
        model, opt = make()
        assert_step_gradients(model, opt, train(model, opt, between=True), pairs(), bce)


    def test_random_forward_never_clears():
        model, opt = make()
        assert_step_gradients(model, opt, train(model, opt, clears=False), pairs(), bce)


    def test_python_random_forward():
        model, opt = make(PythonNoiseNet)
        assert_step_gradients(model, opt, train(model, opt), pairs(), bce)


    @pytest.mark.parametrize("clip", [clip_grad_norm_, torch.nn.utils.clip_grad_norm_], ids=["imported", "dotted"])
    def test_clipped(clip):
        model, opt = make()
        assert_step_gradients(model, opt, train(model, opt, clip=clip, accumulate=2), pairs(), bce)


    def test_clipped_never_clears():
        model, opt = make()
        assert_step_gradients(model, opt, train(model, opt, clears=False, clip=clip_grad_norm_), pairs(), bce)


    def test_loss_scaled():
        model, opt = make()
        assert_step_gradients(model, opt, train(model, opt, scale=0.5), pairs(), bce)


    def dict_loop(model, opt, clears=True):
        def run(data):
            for epoch in range(2):
                for batch in data:
                    labels = batch.pop("labels")  # the loop takes the targets out of the batch dict
                    batch["x"].mul_(1.0)  # and edits a tensor in place
                    if clears:
                        opt.zero_grad()
                    F.binary_cross_entropy_with_logits(model(batch["x"]), labels).backward()
                    opt.step()
        return run


    def test_batch_popped():
        model, opt = make()
        given = dicts()
        assert_step_gradients(model, opt, dict_loop(model, opt), given, bce_of_dict)
        assert all(sorted(batch) == ["labels", "x"] for batch in given)  # the caller's batches are left whole
        assert all(batch["x"]._version == 0 for batch in given)


    def test_batch_popped_never_clears():
        model, opt = make()
        assert_step_gradients(model, opt, dict_loop(model, opt, clears=False), dicts(), bce_of_dict)


    def test_loss_fn_raises():
        model, opt = make()
        with pytest.raises(TorchcheckUsageError) as error:
            assert_step_gradients(model, opt, dict_loop(model, opt), dicts(), lambda m, b: bce_of_dict(m, b["y"]))
        assert str(error.value).startswith(
            "assert_step_gradients: loss_fn=test_loss_fn_raises.<lambda>(m, b) (test_loops.py:"), str(error.value)
        assert "raised KeyError: 'y' when re-run on batches[0] at optimizer step 1" in str(error.value)
''')


def test_step_gradients_of_random_clipped_and_mutating_loops(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_loops=LOOPS)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_random_forward[functional]": "PASSED", "test_random_forward[module]": "PASSED",
        "test_random_forward_accumulates": "PASSED", "test_random_forward_zero_grad_before_step": "FAILED",
        "test_random_forward_never_clears": "FAILED", "test_python_random_forward": "FAILED",
        "test_clipped[imported]": "PASSED", "test_clipped[dotted]": "PASSED", "test_clipped_never_clears": "FAILED",
        "test_loss_scaled": "FAILED", "test_batch_popped": "PASSED", "test_batch_popped_never_clears": "FAILED",
        "test_loss_fn_raises": "PASSED"}, result.stdout.str()

    stale = "  likely cause: the gradients of step 1 are still in .grad: zero_grad() is not called between *"
    inner.message(result, "test_random_forward_zero_grad_before_step").fnmatch_lines([
        "*at optimizer step 1,*", "*", "  likely cause: every gradient is zero or None at step(): zero_grad()*"],
        consecutive=True)
    for test in ("test_random_forward_never_clears", "test_clipped_never_clears", "test_batch_popped_never_clears"):
        inner.message(result, test).fnmatch_lines(["*at optimizer step 2,*", "*", stale], consecutive=True)
    inner.message(result, "test_python_random_forward").fnmatch_lines([
        "*at optimizer step 1,*", "*",
        "  likely cause: the forward is random (two re-runs of loss_fn on the same batch give different "
        "gradients) and replaying the RNG state saved when the batch was drawn did not reproduce the loop's*"],
        consecutive=True)
    inner.message(result, "test_loss_scaled").fnmatch_lines([
        "*at optimizer step 1,*", "*",
        "  likely cause: .grad is the expected gradient scaled by 0.5: gradient clipping that assert_step_gradients "
        "does not see*"], consecutive=True)
    assert "a hook that edits gradients" not in result.stdout.str()
