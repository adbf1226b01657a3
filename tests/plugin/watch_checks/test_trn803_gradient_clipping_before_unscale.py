"""TRN803 at run time (pytest_torchcheck/watch/checks/trn803_gradient_clipping_before_unscale.py): gradients
clipped while they still carried a GradScaler's scale factor, reported at the clip with the factor and the
threshold it became; unscaled gradients, gradients no scaler multiplied and fresh ones are not. The programs use
torch.amp.GradScaler("cpu") on float32 losses: scale() multiplies whatever it is given."""

from __future__ import annotations

import pytest

from tests.plugin.watch_helpers import line_of, watch_program

PROGRAM = """
    import torch
    from torch import nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = SCALER
    x, y = torch.randn(16, 4), torch.randn(16, 2)
    for _ in range(3):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        loss = F.mse_loss(out.float(), y)
        scaler.scale(loss).backward()  # <- backward
        BEFORE
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # <- clip
        scaler.step(opt)
        scaler.update()
"""


def program(scaler: str = 'torch.amp.GradScaler("cpu")', before: str = "pass") -> str:
    return PROGRAM.replace("SCALER", scaler).replace("BEFORE", before)


def clean(tmp_path, source: str) -> None:
    r = watch_program(tmp_path, source, ["TRN803"])
    assert (r.errors, r.code, r.findings) == ([], 0, [])


def test_a_clip_of_scaled_gradients_is_reported_at_the_clip_with_the_scale_and_the_threshold(tmp_path) -> None:
    source = program()
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]
    assert r.messages("TRN803") == [
        "clip_grad_norm_() clipped 4 gradients that still carried the GradScaler's scale factor 65536.0 from "
        f"the scaled backward() at line {line_of(source, '# <- backward')}, with no scaler.unscale_() of their "
        "optimizer since: the threshold was applied to the scaled gradients, so on the true gradients it became "
        "max_norm/scale = 1.0/65536.0 = 1.53e-05; call scaler.unscale_(optimizer) before clipping"]


def test_its_fixed_twin_that_unscales_first_is_clean(tmp_path) -> None:
    clean(tmp_path, program(before="scaler.unscale_(opt)"))


@pytest.mark.parametrize("scaler", [
    'torch.amp.GradScaler("cpu", enabled=False)',
    # a CUDA scaler where CUDA is missing disables itself with a warning (what a CPU-only build does)
    'setattr(torch.cuda, "is_available", lambda: False) or torch.amp.GradScaler("cuda")',
    # the scale stays 1.0: the gradients are the true ones
    'torch.amp.GradScaler("cpu", init_scale=1.0, growth_interval=1000)',
])
def test_a_scaler_that_multiplies_nothing_is_clean(tmp_path, monkeypatch, scaler) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", torch.cuda.is_available)  # the program patches it
    clean(tmp_path, program(scaler=scaler))


@pytest.mark.parametrize("clip", [
    "from torch.nn.utils import clip_grad_norm_; clip_grad_norm_(list(model.parameters()), 1.0)  # <- clip",
    "from torch.nn.utils.clip_grad import clip_grad_norm_; clip_grad_norm_(model.parameters(), 1.0)  # <- clip",
    "nn.utils.clip_grad_norm(model.parameters(), 1.0)  # <- clip",  # deprecated: it calls clip_grad.clip_grad_norm_
])
def test_every_spelling_of_the_clip_is_seen(tmp_path, clip) -> None:
    source = program().replace("torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # <- clip", clip)
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]
    assert "max_norm/scale = 1.0/65536.0 = 1.53e-05" in r.messages("TRN803")[0]


def test_clip_grad_value_of_scaled_gradients_of_one_layer_is_reported(tmp_path) -> None:
    source = program().replace(
        "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # <- clip",
        "from torch.nn.utils.clip_grad import clip_grad_value_; "
        "clip_grad_value_(model[2].parameters(), 0.5)  # <- clip")
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]
    [message] = r.messages("TRN803")
    assert message.startswith("clip_grad_value_() clipped 2 gradients that still carried the GradScaler's scale "
                              "factor 65536.0")
    assert "it became clip_value/scale = 0.5/65536.0 = 7.63e-06" in message


def test_a_list_of_scaled_losses_given_to_autograd_backward_is_followed(tmp_path) -> None:
    source = program().replace(
        "scaler.scale(loss).backward()  # <- backward",
        "torch.autograd.backward(scaler.scale([loss, out.float().pow(2).mean()]))  # <- backward")
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]


def test_a_clip_after_the_step_is_clean(tmp_path) -> None:
    # scaler.step() unscaled the gradients; the next iteration's clip comes before its own backward
    source = program().replace(
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # <- clip\n", "").replace(
        "        scaler.update()\n",
        "        scaler.update()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n")
    assert source.count("clip_grad_norm_") == 1
    clean(tmp_path, source)


def test_a_norm_measured_with_an_infinite_threshold_is_clean(tmp_path) -> None:
    # clip_grad_norm_(..., inf) only measures: nothing is clipped whatever the scale
    clean(tmp_path, program().replace("max_norm=1.0", 'max_norm=float("inf")'))


def test_gradients_unscaled_by_hand_are_clean(tmp_path) -> None:
    clean(tmp_path, program(before="[p.grad.div_(scaler.get_scale()) for p in model.parameters()]"))


def test_accumulated_scaled_micro_batches_unscaled_before_the_clip_are_clean(tmp_path) -> None:
    source = program(before="scaler.scale(F.mse_loss(model(x).float(), y)).backward(); scaler.unscale_(opt)")
    clean(tmp_path, source)


def test_accumulated_scaled_micro_batches_clipped_before_unscale_are_reported(tmp_path) -> None:
    source = program(before="scaler.scale(F.mse_loss(model(x).float(), y)).backward()")
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]


@pytest.mark.parametrize("set_to_none", [True, False])
def test_gradients_cleared_and_rewritten_by_a_plain_backward_are_clean(tmp_path, set_to_none) -> None:
    # the scaled gradients were thrown away (set to None, or zeroed in place) and a loss no scaler
    # multiplied wrote new ones: those are the true gradients
    source = program(before=f"opt.zero_grad(set_to_none={set_to_none}); F.mse_loss(model(x), y).backward()").replace(
        "        scaler.step(opt)\n        scaler.update()\n", "        opt.step()\n")
    clean(tmp_path, source)


TWO_MODELS = """
    import torch
    from torch import nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    student, probe = nn.Linear(4, 2), nn.Linear(4, 2)
    opt_s = torch.optim.SGD(student.parameters(), lr=0.1)
    opt_p = torch.optim.SGD(probe.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    x, y = torch.randn(16, 4), torch.randn(16, 2)
    for _ in range(3):
        opt_s.zero_grad(); opt_p.zero_grad()
        scaled = scaler.scale(F.mse_loss(student(x), y))
        F.mse_loss(probe(x), y).backward()  # the probe trains in float32, no scaler
        scaled.backward()
        torch.nn.utils.clip_grad_norm_(probe.parameters(), 1.0)
        CLIP
        opt_p.step()
        scaler.step(opt_s)
        scaler.update()
"""


def test_clipping_the_parameters_of_an_optimizer_no_scaler_touches_is_clean(tmp_path) -> None:
    # the probe's plain backward runs while the student's scaled loss waits for its own
    clean(tmp_path, TWO_MODELS.replace(
        "CLIP", "scaler.unscale_(opt_s); torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)"))


def test_of_two_optimizers_only_the_scaled_ones_clip_is_reported(tmp_path) -> None:
    source = TWO_MODELS.replace("CLIP", "torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)  # <- clip")
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]
    assert r.messages("TRN803")[0].startswith("clip_grad_norm_() clipped 2 gradients")


def test_unscaling_one_optimizer_leaves_the_others_gradients_scaled(tmp_path) -> None:
    # one loss over both models, two optimizers: only the first was unscaled before clipping everything
    source = TWO_MODELS.replace(
        "        F.mse_loss(probe(x), y).backward()  # the probe trains in float32, no scaler\n", "").replace(
        "scaler.scale(F.mse_loss(student(x), y))", "scaler.scale(F.mse_loss(student(x) + probe(x), y))").replace(
        "scaled.backward()", "scaled.backward(); scaler.unscale_(opt_s)").replace(
        "torch.nn.utils.clip_grad_norm_(probe.parameters(), 1.0)",
        "torch.nn.utils.clip_grad_norm_([*student.parameters(), *probe.parameters()], 1.0)  # <- clip").replace(
        "CLIP", "pass").replace("opt_p.step()", "scaler.step(opt_p)")
    r = watch_program(tmp_path, source, ["TRN803"])
    assert r.errors == []
    assert r.lines == [("TRN803", line_of(source, "# <- clip"))]
    assert r.messages("TRN803")[0].startswith("clip_grad_norm_() clipped 2 gradients")


def test_a_gradient_penalty_computed_with_a_scaled_autograd_grad_is_clean(tmp_path) -> None:
    # the AMP recipe: autograd.grad of a scaled loss writes no .grad; the gradients are unscaled before the clip
    source = program(before="scaler.unscale_(opt)").replace(
        "scaler.scale(loss).backward()  # <- backward",
        "grads = torch.autograd.grad(scaler.scale(loss), list(model.parameters()), create_graph=True)\n"
        "        penalty = sum(g.pow(2).sum() for g in grads) / scaler.get_scale() ** 2\n"
        "        scaler.scale(loss + penalty).backward()")
    clean(tmp_path, source)
