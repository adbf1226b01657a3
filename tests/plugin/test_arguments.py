"""A callable with the wrong signature, or a loss_fn returning the wrong thing, handed to an assertion helper.

Each is a usage error that names the argument, the callable as defined (signature, file and line) and the
call the check makes, and whose traceback ends at the user's line: never a bare ``TypeError`` from inside
an optimizer hook or ``torch.autograd.grad`` with torch's frames.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.plugin.test_failure_output import failure_section, line_of

BAD = textwrap.dedent('''
    import torch
    import torch.nn.functional as F
    from torch import nn

    from pytest_torchcheck import (assert_deterministic, assert_eval_mode, assert_grad_flow, assert_gradcheck,
                                   assert_no_graph_retained, assert_overfits, assert_step_gradients,
                                   assert_train_mode, nan_guard)


    def make():
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        return model, torch.optim.SGD(model.parameters(), lr=0.1), [torch.randn(8, 4) for _ in range(3)]


    def loss_of_batch(batch):
        return batch.pow(2).mean()


    def train(model, opt, loss):
        def run(data):
            for batch in data:
                opt.zero_grad()
                loss(model, batch).backward()
                opt.step()
        return run


    def test_loss_fn_one_argument():
        model, opt, batches = make()
        assert_step_gradients(model, opt, train(model, opt, lambda m, b: m(b).mean()), batches, loss_of_batch)


    def test_loss_fn_returns_a_tuple():
        model, opt, batches = make()

        def loss_and_output(model, batch):
            out = model(batch)
            return out.pow(2).mean(), out

        def run(data):
            for batch in data:
                opt.zero_grad()
                loss_and_output(model, batch)[0].backward()
                opt.step()

        assert_step_gradients(model, opt, run, batches, loss_and_output)


    def test_loss_fn_not_reduced():
        model, opt, batches = make()
        assert_step_gradients(model, opt, train(model, opt, lambda m, b: m(b).pow(2).mean()), batches,
                              lambda m, b: m(b).pow(2))


    def test_loss_fn_not_callable():
        model, opt, batches = make()
        assert_step_gradients(model, opt, train(model, opt, lambda m, b: m(b).mean()), batches, "mse")


    def test_run_without_arguments():
        model, opt, batches = make()

        def loop():
            pass

        assert_step_gradients(model, opt, loop, batches, lambda m, b: m(b).mean())


    def test_model_passed_as_optimizer():
        model, opt, batches = make()
        assert_step_gradients(model, model, train(model, opt, lambda m, b: m(b).mean()), batches,
                              lambda m, b: m(b).mean())


    def test_step_gradients_tolerance_not_a_number():
        model, opt, batches = make()
        assert_step_gradients(model, opt, train(model, opt, lambda m, b: m(b).mean()), batches,
                              lambda m, b: m(b).mean(), rtol="1e-4")


    def test_evaluate_missing_an_argument():
        model, _, batches = make()

        def evaluate(model, x):
            with torch.no_grad():
                return model(x)

        assert_eval_mode(model.eval(), evaluate, batches[0])


    def test_train_mode_run_with_a_parameter():
        model, opt, batches = make()

        def fit(epochs):
            pass

        assert_train_mode(model, opt, fit)


    def test_graph_run_with_a_parameter():
        model, opt, batches = make()
        assert_no_graph_retained(opt, train(model, opt, lambda m, b: m(b).mean()))


    def test_gradcheck_fn_two_parameters_one_input():
        def scaled(x, scale):
            return x * scale

        assert_gradcheck(scaled, torch.randn(3, dtype=torch.float64, requires_grad=True))


    def test_gradcheck_module_forward_two_parameters():
        class Pair(nn.Module):
            def forward(self, x, y):
                return x * y

        assert_gradcheck(Pair(), torch.randn(3, dtype=torch.float64, requires_grad=True))


    def test_grad_flow_closure_with_an_argument():
        model, _, batches = make()
        assert_grad_flow(model, lambda batch: model(batch).mean())


    def test_overfits_loss_class_not_instance():
        model, _, batches = make()
        assert_overfits(model, (batches[0], torch.randn(8, 1)), loss_fn=nn.MSELoss)


    def test_nan_guard_watches_parameters_not_a_model():
        model, _, batches = make()
        with nan_guard() as guard:
            guard.watch(model.parameters)


    def test_deterministic_fn_with_an_argument():
        model, _, batches = make()
        assert_deterministic(lambda x: model(x))
''')

USAGE = "TorchcheckUsageError"
EXPECTED = {
    "test_loss_fn_one_argument": [
        "*assert_step_gradients: loss_fn=loss_of_batch(batch) (test_bad.py:{loss_of_batch}) cannot be called as "
        "loss_fn(model, batch): too many positional arguments",
        "  expected: loss_fn(model, batch): the mean loss of that one micro-batch, a scalar tensor computed from the "
        "model"],
    "test_loss_fn_returns_a_tuple": [
        "*assert_step_gradients: loss_fn=test_loss_fn_returns_a_tuple.loss_and_output(model, batch) "
        "(test_bad.py:{loss_and_output}) returned a tuple of 2 items (Tensor, Tensor) for batches[0]",
        "  expected: loss_fn(model, batch): the mean loss of that one micro-batch*"],
    "test_loss_fn_not_reduced": [
        "*assert_step_gradients: loss_fn=test_loss_fn_not_reduced.<lambda>(m, b) (test_bad.py:*) returned a tensor "
        "of shape (8, 1) (reduce it to the mean loss, .mean()) for batches[0]", "  expected: *"],
    "test_loss_fn_not_callable": [
        "*assert_step_gradients: loss_fn must be callable, got str 'mse'",
        "  expected: loss_fn(model, batch): *"],
    "test_run_without_arguments": [
        "*assert_step_gradients: run=test_run_without_arguments.loop() (test_bad.py:{def loop}) cannot be called as "
        "run(batches): too many positional arguments",
        "  expected: run(batches): your training loop, run over the batches it is given"],
    "test_model_passed_as_optimizer": [
        "*assert_step_gradients: optimizer must be the torch.optim.Optimizer your loop steps (its step() is "
        "watched), got Linear Linear(in_features=4, out_features=1, bias=True)"],
    "test_step_gradients_tolerance_not_a_number": [
        "*assert_step_gradients: rtol must be a non-negative finite number, got '1e-4'"],
    "test_evaluate_missing_an_argument": [
        "*assert_eval_mode: evaluate=test_evaluate_missing_an_argument.evaluate(model, x) "
        "(test_bad.py:{def evaluate}) cannot be called as evaluate(Tensor): missing a required argument: 'x'",
        "  expected: evaluate(Tensor): your evaluation, called with the arguments given after it"],
    "test_train_mode_run_with_a_parameter": [
        "*assert_train_mode: run=test_train_mode_run_with_a_parameter.fit(epochs) (test_bad.py:{def fit}) cannot be "
        "called as run(): missing a required argument: 'epochs'",
        "  expected: run(): your training loop, validation included, with no arguments"],
    "test_graph_run_with_a_parameter": [
        "*assert_no_graph_retained: run=train.run(data) (test_bad.py:{def run(data)}) cannot be called as run(): "
        "missing a required argument: 'data'", "  expected: run(): your training loop, with no arguments"],
    "test_gradcheck_fn_two_parameters_one_input": [
        "*assert_gradcheck: fn=test_gradcheck_fn_two_parameters_one_input.scaled(x, scale) (test_bad.py:{def scaled}) "
        "cannot be called as fn(Tensor): missing a required argument: 'scale'", "  expected: fn(Tensor): *"],
    "test_gradcheck_module_forward_two_parameters": [
        "*assert_gradcheck: fn.forward=*Pair.forward(x, y) (test_bad.py:{def forward}) cannot be called as "
        "fn(Tensor): missing a required argument: 'y'"],
    "test_grad_flow_closure_with_an_argument": [
        "*assert_grad_flow: loss=test_grad_flow_closure_with_an_argument.<lambda>(batch) (test_bad.py:*) cannot be "
        "called as loss(): missing a required argument: 'batch'"],
    "test_overfits_loss_class_not_instance": [
        "*assert_overfits: loss_fn is the class MSELoss, not a loss or function; pass an instance, "
        "loss_fn=MSELoss()", "  expected: loss_fn(outputs, targets): the scalar loss of model(inputs) against the "
        "targets"],
    "test_nan_guard_watches_parameters_not_a_model": [
        "*nan_guard.watch: model must be a torch.nn.Module, got method <bound method Module.parameters of Linear(*"],
    "test_deterministic_fn_with_an_argument": [
        "*assert_deterministic: fn=test_deterministic_fn_with_an_argument.<lambda>(x) (test_bad.py:*) cannot be "
        "called as fn(): missing a required argument: 'x'"],
}
# Where each failure must end: the user's line that handed over (or called into) the bad callable.
ENDS_AT = {"test_loss_fn_returns_a_tuple": "opt.step()", "test_loss_fn_not_reduced": "opt.step()",
           "test_nan_guard_watches_parameters_not_a_model": "guard.watch("}


def test_bad_callables_are_usage_errors_naming_them(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_bad=BAD)
    result = inner.run("--tb=auto")
    outcomes = inner.outcomes(result)
    assert outcomes == {test: "FAILED" for test in EXPECTED}, result.stdout.str()
    for test, patterns in EXPECTED.items():
        lines = [line[1:] for line in failure_section(result, test) if line.startswith("E   ")]
        message = pytest.LineMatcher(textwrap.dedent("\n".join(lines)).splitlines())
        filled = [p.replace("{", "\0").replace("}", "\1") for p in patterns]
        for i, p in enumerate(filled):
            while "\0" in p:
                start, end = p.index("\0"), p.index("\1")
                p = p[:start] + str(line_of(BAD, p[start + 1:end])) + p[end + 1:]
            filled[i] = p.replace("[", "[[]")  # fnmatch: a bracket is a character class
        message.fnmatch_lines(filled, consecutive=True)
        # Short: the error and at most one line saying what is expected, every line bounded.
        assert len(patterns) <= len(lines) <= 2, "\n".join(lines)
        assert all(len(line) <= 250 for line in lines), "\n".join(lines)

        block = failure_section(result, test)
        text = "\n".join(block)
        last = [line for line in block if line.strip()][-1]
        assert last.startswith("test_bad.py:") and last.endswith(f": {USAGE}"), text
        number = int(last.split(":")[1])
        source_line = BAD.lstrip("\n").splitlines()[number - 1]
        assert ENDS_AT.get(test, "assert_") in source_line, text
        assert "site-packages/torch" not in text and "TypeError: " not in text, text
        assert "pytest_torchcheck/" not in text, text
