"""Failure output, measured in real pytest sessions: each failure ends at the user's frame and fits on a screen.

A failure section is the block pytest prints between a test's ``____ test_x ____`` header and the next
header or report section; these tests count its lines and read what is (and is not) in it.
"""

from __future__ import annotations

import re
import textwrap

import pytest

NAN_GUARD = textwrap.dedent('''
    import pytest
    import torch
    from torch import nn

    from pytest_torchcheck import nan_guard as nan_guard_block


    class Log(nn.Module):
        def forward(self, x):
            return torch.log(x)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Identity(), Log(), nn.Linear(3, 2))

        def forward(self, x):
            return self.encoder(x)


    def bad_input():
        return torch.arange(-2.0, 4.0).reshape(2, 3)


    def zero_model():
        model = nn.Sequential(nn.Linear(4, 4))
        with torch.no_grad():
            model[0].weight.zero_()
            model[0].bias.zero_()
        return model


    @pytest.mark.nan_guard
    def test_marker_forward():
        Net()(bad_input())


    def test_fixture_backward(nan_guard):
        out = zero_model()(torch.ones(2, 4))
        torch.sqrt(out).sum().backward()


    def test_block_forward():
        with nan_guard_block():
            Net()(bad_input())
''')


def line_of(source: str, text: str) -> int:
    """The line of `text` in `source` as pytester writes it (leading blank lines stripped)."""
    return next(i for i, line in enumerate(source.lstrip("\n").splitlines(), start=1) if text in line)


def failure_section(result: pytest.RunResult, test: str) -> list[str]:
    """The lines of ``test``'s failure section, without its header and without the torchcheck section."""
    lines = result.outlines
    header = re.compile(rf"^_+ {re.escape(test)} _+$")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    assert start is not None, f"no failure section for {test}:\n" + "\n".join(lines)
    block = []
    for line in lines[start + 1:]:
        if re.match(r"^(_{3,} \S+ _{3,}|-{3,} torchcheck -{3,}|={3,})", line):
            break
        block.append(line)
    return block


def assert_no_library_source(block: list[str]) -> None:
    text = "\n".join(block)
    for needle in ("site-packages/torch", "_call_impl", "def inner", "_engine_run_backward", "pytest_torchcheck/",
                   "contextlib.py", "def all_reduce", "Reduces the tensor data"):
        assert needle not in text, f"{needle!r} in the failure:\n{text}"


def test_nan_guard_failures_end_at_the_users_frame_in_under_40_lines(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_guarded=NAN_GUARD)
    result = inner.run("--tb=auto")
    assert inner.outcomes(result) == {"test_marker_forward": "FAILED", "test_fixture_backward": "FAILED",
                                      "test_block_forward": "FAILED"}
    forward = line_of(NAN_GUARD, "return self.encoder(x)")
    backward = line_of(NAN_GUARD, "torch.sqrt(out).sum().backward()")
    for test, last_user_line, message in [
        ("test_marker_forward", f"test_guarded.py:{forward}: TorchcheckFailure",
         "nan_guard: forward output of module 'Net.encoder.1' (Log) is not finite"),
        ("test_fixture_backward", f"test_guarded.py:{backward}: TorchcheckFailure",
         "nan_guard: gradient w.r.t. the output of module 'Sequential.0' is not finite during backward"),
        ("test_block_forward", f"test_guarded.py:{forward}: TorchcheckFailure",
         "nan_guard: forward output of module 'Net.encoder.1' (Log) is not finite"),
    ]:
        block = failure_section(result, test)
        assert len(block) <= 40, f"{test}: {len(block)} lines:\n" + "\n".join(block)
        assert_no_library_source(block)
        assert any(message in line for line in block), "\n".join(block)
        assert [line for line in block if line.strip()][-1] == last_user_line, "\n".join(block)


def test_fulltrace_still_shows_torchs_frames(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_guarded=NAN_GUARD)
    result = inner.run("--tb=auto", "--fulltrace", "-k", "test_marker_forward")
    block = failure_section(result, "test_marker_forward")
    assert any("_call_impl" in line for line in block)
    assert len(block) > 60  # what the default output spares the user


DDP = textwrap.dedent('''
    import time

    import pytest
    import torch
    import torch.distributed as dist
    from torch import nn

    from pytest_torchcheck import assert_replicas_in_sync


    @pytest.mark.distributed(world_size=2)
    def test_replicas_differ(rank):
        torch.manual_seed(rank)  # rank-dependent initialisation, never synchronised
        assert_replicas_in_sync(nn.Linear(3, 2))


    @pytest.mark.distributed(world_size=2, timeout=4)
    def test_collective_on_one_rank(rank):
        t = torch.ones(2)
        if rank == 0:
            dist.all_reduce(t)  # rank 1 never enters it
        else:
            time.sleep(30)
''')


def test_ddp_failures_print_each_distinct_failure_once(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_ddp=DDP)
    result = inner.run("--tb=auto")
    assert inner.outcomes(result) == {"test_replicas_differ": "FAILED", "test_collective_on_one_rank": "FAILED"}

    block = failure_section(result, "test_replicas_differ")
    text = "\n".join(block)
    assert text.count("differs between ranks") == 1, text
    assert text.count("(root cause)") == 1, text
    where = f"test_ddp.py:{line_of(DDP, 'assert_replicas_in_sync(nn.')}"
    consequence = re.compile(rf"rank [01] of 2: failed in call at {where} \(consequence\): the same failure as above")
    assert sum(bool(consequence.fullmatch(line)) for line in block) == 1, text
    assert len(block) <= 25, f"{len(block)} lines:\n{text}"

    # The hang: rank 0 waits in all_reduce. Whether the process group's timeout or the test's deadline
    # ends it, the report shows the user's line, and torch's collective in one line at most.
    block = failure_section(result, "test_collective_on_one_rank")
    text = "\n".join(block)
    assert_no_library_source(block)
    collective = line_of(DDP, "dist.all_reduce(t)")
    assert f"test_ddp.py:{collective}" in text or f'test_ddp.py", line {collective} in' in text, text
    assert len(block) <= 40, f"{len(block)} lines:\n{text}"


EVERY_CHECK = textwrap.dedent('''
    import torch
    import torch.nn.functional as F
    from torch import nn

    import pytest_torchcheck as tc


    def net():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


    class Swish(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * torch.sigmoid(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * torch.sigmoid(x)  # wrong: misses x * s * (1 - s)


    def test_assert_finite():
        tc.assert_finite(torch.tensor([1.0, float("inf")]))


    def test_assert_gradcheck():
        tc.assert_gradcheck(Swish.apply, torch.randn(3, 4))


    def test_assert_grad_flow():
        model = net()
        tc.assert_grad_flow(model, lambda: model[2](torch.randn(3, 8)).sum())


    def test_assert_params_update():
        model = net()
        opt = torch.optim.SGD(model[2].parameters(), lr=0.1)
        tc.assert_params_update(model, opt, lambda: model(torch.randn(3, 4)).sum().backward() or opt.step())


    def test_assert_optimizer_covers():
        model = net()
        tc.assert_optimizer_covers(model, torch.optim.SGD(model[0].parameters(), lr=0.1))


    def test_assert_loss_at_init():
        tc.assert_loss_at_init(torch.tensor(9.0), num_classes=10)


    def test_assert_overfits():
        model = net()
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        tc.assert_overfits(model, (torch.randn(8, 4), torch.randint(2, (8,))), F.cross_entropy, opt, steps=5)


    def test_assert_batch_independent():
        tc.assert_batch_independent(lambda x: x - x.mean(0), torch.randn(4, 3))


    def test_assert_modules_registered():
        model = net()
        model.extra = [nn.Linear(2, 2)]
        tc.assert_modules_registered(model)


    def test_assert_deterministic():
        tc.assert_deterministic(lambda: torch.randn(3), seed=None)
''')


def test_every_check_ends_at_the_users_line(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_every=EVERY_CHECK)
    result = inner.run("--tb=auto")
    outcomes = inner.outcomes(result)
    assert set(outcomes.values()) == {"FAILED"} and len(outcomes) == 10, result.stdout.str()
    source = EVERY_CHECK.lstrip("\n").splitlines()
    for test in outcomes:
        block = failure_section(result, test)
        assert_no_library_source(block)
        last = [line for line in block if line.strip()][-1]
        assert last.startswith("test_every.py:") and last.endswith(": TorchcheckFailure"), "\n".join(block)
        line = source[int(last.split(":")[1]) - 1]
        assert f"tc.{test.removeprefix('test_')}(" in line, f"{test} ends at {line!r}:\n" + "\n".join(block)


STEP_LOOP = textwrap.dedent('''
    import torch
    from torch import nn

    from pytest_torchcheck import assert_step_gradients


    def train(model, optimizer, loader):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()  # zero_grad() is missing


    def test_loop():
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        batches = [(torch.randn(3, 4), torch.randn(3, 1)) for _ in range(3)]
        assert_step_gradients(model, optimizer, lambda loader: train(model, optimizer, loader), batches,
                              lambda m, b: nn.functional.mse_loss(m(b[0]), b[1]))
''')


def test_a_loops_model_and_optimizer_arguments_are_one_line_each(pytester: pytest.Pytester, inner) -> None:
    pytester.makepyfile(test_step=STEP_LOOP)
    result = inner.run("--tb=auto")
    block = failure_section(result, "test_loop")
    text = "\n".join(block)
    # pytest prints the arguments of the failing frame: the model and the optimizer, folded to a line each,
    # and the recorded batches under a name the user knows.
    assert "model = Sequential( ... (7-line repr folded; -l shows it)" in text, text
    assert "optimizer = Adam ( ... (13-line repr folded; -l shows it)" in text, text
    assert "loader = <the 3 batches given to assert_step_gradients, 2 drawn so far>" in text, text
    assert not any(line.lstrip().startswith(("(0): Linear", "lr:", "betas:")) for line in block), text
    assert "_Recorded" not in text and "object at 0x" not in text
    assert len(block) <= 35, f"{len(block)} lines:\n{text}"
    assert any("at optimizer step 2, .grad is not the mean gradient" in line for line in block), text
    # -l asks for locals: nothing is folded then.
    shown = "\n".join(failure_section(inner.run("--tb=auto", "-l"), "test_loop"))
    assert "(0): Linear(in_features=4" in shown and "repr folded" not in shown
