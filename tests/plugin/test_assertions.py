"""The training-sanity assertions, each run in a real pytest session and judged by its failure message."""

from __future__ import annotations

import glob

import pytest


def _assert_failure(inner, result: pytest.RunResult, test: str, lines: list[str]) -> None:
    """``test``'s exception message holds ``lines`` (fnmatch patterns), in order, one after the other."""
    inner.message(result, test).fnmatch_lines(lines, consecutive=True)


ASSERT_FINITE = """
import collections

import pytest
import torch
from torch import nn

from pytest_torchcheck import assert_finite

Output = collections.namedtuple("Output", "logits aux")


def test_inf_tensor():
    assert_finite(torch.tensor([1.0, float("inf")]))


def test_finite_tensor_passes():
    assert_finite(torch.tensor([1.0, -3.0, 0.0]))


def test_nested_structure():
    batch = {"ok": torch.ones(2), "pairs": [torch.zeros(3), Output(torch.ones(2), torch.tensor([[0.0, float("nan")]]))]}
    assert_finite(batch, name="batch")


def test_module_parameters_and_gradients():
    layer = nn.Linear(2, 2)
    with torch.no_grad():
        layer.bias[1] = float("nan")
    layer.weight.grad = torch.tensor([[0.0, 1.0], [float("-inf"), 2.0]])
    assert_finite(layer)


def test_finite_module_passes():
    layer = nn.Linear(2, 2)
    layer(torch.randn(3, 2)).sum().backward()
    assert_finite(layer)


def test_non_tensor_is_type_error():
    with pytest.raises(TypeError, match="assert_finite: no tensor found in list"):
        assert_finite([1.0, float("inf")])
"""


def test_assert_finite(pytester, inner):
    pytester.makepyfile(test_finite=ASSERT_FINITE)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_inf_tensor": "FAILED", "test_finite_tensor_passes": "PASSED", "test_nested_structure": "FAILED",
        "test_module_parameters_and_gradients": "FAILED", "test_finite_module_passes": "PASSED",
        "test_non_tensor_is_type_error": "PASSED",
    }
    _assert_failure(inner, result, "test_inf_tensor", [
        "*TorchcheckFailure: assert_finite: 1 of 1 tensors hold non-finite values",
        "  value: shape (2,), 0 NaN, 1 Inf of 2 elements; first at index (1,)",
    ])
    _assert_failure(inner, result, "test_nested_structure", [
        "*TorchcheckFailure: assert_finite: 1 of 4 tensors hold non-finite values",
        glob.escape("  batch['pairs'][1].aux: shape (1, 2), 1 NaN, 0 Inf of 2 elements; first at index (0, 1)"),
    ])
    _assert_failure(inner, result, "test_module_parameters_and_gradients", [
        "*TorchcheckFailure: assert_finite: 2 of 3 tensors hold non-finite values",
        "  gradient of weight: shape (2, 2), 0 NaN, 1 Inf of 4 elements; first at index (1, 0)",
        "  parameter bias: shape (2,), 1 NaN, 0 Inf of 2 elements; first at index (1,)",
    ])


GRAD_FLOW = """
import importlib.util

import pytest
import torch
from torch import nn

from pytest_torchcheck import assert_grad_flow


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(3, 3)
        self.side = nn.Linear(3, 3)
        self.head = nn.Linear(3, 1)
        self.unused = nn.Linear(3, 3)
        self.frozen = nn.Linear(3, 3)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        return self.head(self.stem(x) + self.side(x).detach() + self.frozen(x))


def loss_of(model):
    x = torch.randn(4, 3)
    return lambda: model(x).pow(2).mean()


def test_detached_branch():
    model = Branchy()
    assert_grad_flow(model, loss_of(model), ignore=["unused.*"])


def test_ignored_and_frozen_pass():
    model = Branchy()
    report = assert_grad_flow(model, loss_of(model), ignore=["unused.*", "side.*"])
    assert report.frozen == ["frozen.weight", "frozen.bias"]
    assert report.ignored == ["side.weight", "side.bias", "unused.weight", "unused.bias"]
    assert [row.name for row in report.rows] == ["stem.weight", "stem.bias", "head.weight", "head.bias"]


def chain(first, last):
    # y = last * first * x: d/d(first) = last, d/d(last) = first, so first/last norm ratio = last/first.
    model = nn.Sequential(nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False))
    with torch.no_grad():
        model[0].weight.fill_(first)
        model[1].weight.fill_(last)
    return model, model(torch.ones(1, 1)).sum()


def test_exploding():
    assert_grad_flow(*chain(1.0, 100.0))


def test_exploding_threshold_raised_passes():
    assert_grad_flow(*chain(1.0, 100.0), exploding_ratio=150.0)


def test_exploding_threshold_lowered():
    assert_grad_flow(*chain(1.0, 10.0), exploding_ratio=5.0)


def test_vanishing():
    assert_grad_flow(*chain(1.0, 1e-5))


def test_vanishing_threshold_lowered_passes():
    assert_grad_flow(*chain(1.0, 1e-5), vanishing_ratio=1e-6)


def test_plot(tmp_path):
    model = Branchy()
    path = tmp_path / "flow.png"
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.warns(UserWarning, match="matplotlib is not installed; no chart written"):
            assert_grad_flow(model, loss_of(model), ignore=["unused.*", "side.*"], plot=str(path))
        assert not path.exists()
    else:
        assert_grad_flow(model, loss_of(model), ignore=["unused.*", "side.*"], plot=str(path))
        assert path.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
"""


def test_assert_grad_flow(pytester, inner):
    pytester.makepyfile(test_flow=GRAD_FLOW)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_detached_branch": "FAILED", "test_ignored_and_frozen_pass": "PASSED", "test_exploding": "FAILED",
        "test_exploding_threshold_raised_passes": "PASSED", "test_exploding_threshold_lowered": "FAILED",
        "test_vanishing": "FAILED", "test_vanishing_threshold_lowered_passes": "PASSED", "test_plot": "PASSED",
    }
    # A table ordered by layer (definition order); frozen and ignored parameters listed apart, not as failures.
    _assert_failure(inner, result, "test_detached_branch", [
        "*TorchcheckFailure: assert_grad_flow: 2 of 6 trainable parameters have a gradient problem "
        "(side.weight, side.bias)",
        "    #  parameter    shape *grad norm  zeros  problem",
        "    0  stem.weight  (3, 3) *  ok",
        "    1  stem.bias    (3,) *  ok",
        "    2  side.weight  (3, 3) *None *not connected to the loss (gradient is None)",
        "    3  side.bias    (3,) *None *not connected to the loss (gradient is None)",
        "    4  head.weight  (1, 3) *  ok",
        "    5  head.bias    (1,) *  ok",
        "  frozen (requires_grad=False, not checked): frozen.weight, frozen.bias",
        "  ignored by pattern: unused.weight, unused.bias",
        "  likely causes: a branch cut by .detach()*",
    ])
    _assert_failure(inner, result, "test_exploding", [
        "*TorchcheckFailure: assert_grad_flow: 1 of 2 trainable parameters have a gradient problem (0.weight)",
        "*",
        "    0  0.weight *1.000e+02 *exploding: first/last layer norm ratio 100 > 70",
        "    1  1.weight *1.000e+00 *ok",
    ])
    _assert_failure(inner, result, "test_exploding_threshold_lowered", [
        "*",
        "*",
        "    0  0.weight *exploding: first/last layer norm ratio 10 > 5",
    ])
    _assert_failure(inner, result, "test_vanishing", [
        "*",
        "*",
        "    0  0.weight *1.000e-05 *vanishing: first/last layer norm ratio 1.00e-05 < 0.001 "
        "and first-layer norm 1.00e-05 < 0.0001",
    ])


PARAMS_UPDATE = """
import torch
from torch import nn

from pytest_torchcheck import assert_optimizer_covers, assert_params_update


class TwoPart(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(3, 3)
        self.head = nn.Linear(3, 1)
        self.scale = nn.Parameter(torch.ones(2), requires_grad=False)

    def forward(self, x):
        return self.head(self.encoder(x))


def sgd_step(model, optimizer):
    def step():
        optimizer.zero_grad()
        model(torch.randn(4, 3)).pow(2).mean().backward()
        optimizer.step()
    return step


def test_head_missing_from_optimizer():
    model = TwoPart()
    optimizer = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
    assert_params_update(model, optimizer, sgd_step(model, optimizer))


def test_frozen_parameter_changed():
    model = TwoPart()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = sgd_step(model, optimizer)

    def step_and_rescale():
        step()
        with torch.no_grad():
            model.scale.mul_(2)

    assert_params_update(model, optimizer, step_and_rescale)


def test_all_parameters_update():
    model = TwoPart()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    assert_params_update(model, optimizer, sgd_step(model, optimizer))


def test_adamw_weight_decay_with_zero_gradient_is_not_an_update_failure():
    model = TwoPart()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.5)
    before = model.encoder.weight.detach().clone()

    def step():
        optimizer.zero_grad()
        (model(torch.randn(4, 3)).sum() * 0.0).backward()  # every gradient exists and is all zeros
        optimizer.step()

    assert_params_update(model, optimizer, step)
    assert torch.count_nonzero(model.encoder.weight.grad) == 0
    assert not torch.equal(before, model.encoder.weight)  # moved by weight decay alone: not learning


def test_optimizer_covers_missing_head():
    model = TwoPart()
    assert_optimizer_covers(model, torch.optim.SGD(model.encoder.parameters(), lr=0.1))


def test_optimizer_covers_param_groups():
    model = TwoPart()
    groups = [{"params": model.encoder.parameters()}, {"params": model.head.parameters(), "lr": 1e-3}]
    assert_optimizer_covers(model, torch.optim.SGD(groups, lr=0.1))
"""


def test_assert_params_update_and_optimizer_covers(pytester, inner):
    pytester.makepyfile(test_update=PARAMS_UPDATE)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_head_missing_from_optimizer": "FAILED", "test_frozen_parameter_changed": "FAILED",
        "test_all_parameters_update": "PASSED",
        "test_adamw_weight_decay_with_zero_gradient_is_not_an_update_failure": "PASSED",
        "test_optimizer_covers_missing_head": "FAILED", "test_optimizer_covers_param_groups": "PASSED",
    }
    _assert_failure(inner, result, "test_head_missing_from_optimizer", [
        "*TorchcheckFailure: assert_params_update: 2 trainable parameter(s) did not update:",
        "  head.weight (1, 3): non-zero gradient, unchanged; not in any optimizer parameter group",
        "  head.bias (1,): non-zero gradient, unchanged; not in any optimizer parameter group",
    ])
    _assert_failure(inner, result, "test_frozen_parameter_changed", [
        "*TorchcheckFailure: assert_params_update: 1 frozen parameter(s) changed:",
        "  scale (2,): requires_grad=False but changed *",
    ])
    _assert_failure(inner, result, "test_optimizer_covers_missing_head", [
        "*TorchcheckFailure: assert_optimizer_covers: 2 trainable parameter(s) of TwoPart are in no parameter "
        "group of SGD; they will never be trained:",
        "  head.weight (1, 3)",
        "  head.bias (1,)",
        "  likely cause: *",
    ])


LOSS_AND_OVERFIT = """
import torch
import torch.nn.functional as F
from torch import nn

from pytest_torchcheck import assert_loss_at_init, assert_overfits


def test_loss_near_ln_classes():
    logits = 0.01 * torch.randn(256, 10)
    assert_loss_at_init(F.cross_entropy(logits, torch.randint(10, (256,))), num_classes=10)


def test_loss_logits_too_large():
    logits = 50.0 * torch.randn(256, 10)
    assert_loss_at_init(F.cross_entropy(logits, torch.randint(10, (256,))), num_classes=10)


def mlp_and_batch():
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 3))
    return model, (torch.randn(8, 4), torch.randint(3, (8,)))


def test_good_step_overfits():
    model, batch = mlp_and_batch()
    curve = assert_overfits(model, batch, F.cross_entropy, steps=300)
    assert curve[-1] < 0.05 * curve[0]


def test_zero_grad_between_backward_and_step():
    model, (x, y) = mlp_and_batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(batch):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.zero_grad()  # the bug: gradients cleared before the step
        optimizer.step()
        return loss

    assert_overfits(model, (x, y), F.cross_entropy, steps=30, train_step=train_step)
"""


def test_assert_loss_at_init_and_assert_overfits(pytester, inner):
    pytester.makepyfile(test_loss=LOSS_AND_OVERFIT)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_loss_near_ln_classes": "PASSED", "test_loss_logits_too_large": "FAILED",
        "test_good_step_overfits": "PASSED", "test_zero_grad_between_backward_and_step": "FAILED",
    }
    _assert_failure(inner, result, "test_loss_logits_too_large", [
        "*TorchcheckFailure: assert_loss_at_init: loss at initialisation is *, expected ln(10) = 2.3026 within 20% "
        + glob.escape("([1.8421, 2.7631])"),
        "  likely cause: the logits start too large: *",
    ])
    overfit = inner.message(result, "test_zero_grad_between_backward_and_step")
    overfit.fnmatch_lines([
        "*TorchcheckFailure: assert_overfits: loss on one fixed batch did not fall below * in 30 steps "
        "(first *, best *, last *)",
        "  curve: *",
        "  steps 0: *, 3: *, 6: *, 10: *, 13: *, 16: *, 19: *, 23: *, 26: *, 29: *",
        "  likely cause: gradients never reach the parameters (zero_grad between backward and step, *",
    ], consecutive=True)
    first = overfit.lines[0]
    assert "(first " in first
    values = first.split("(first ")[1].rstrip(")").replace("best ", "").replace("last ", "").split(", ")
    assert len(set(values)) == 1  # the loss never moved: first == best == last


BATCH_INDEPENDENT = """
import torch
from torch import nn

from pytest_torchcheck import assert_batch_independent


class MixesBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        batch = x.shape[0]
        return self.proj(x).t().reshape(batch, -1)  # should be .reshape(batch, -1) without the transpose


def with_batchnorm():
    return nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))


def test_view_mixes_samples():
    assert_batch_independent(MixesBatch(), torch.randn(4, 6))


def test_batchnorm_in_train_mode_is_usage_error():
    assert_batch_independent(with_batchnorm(), torch.randn(4, 6))


def test_batchnorm_in_eval_mode_passes():
    assert_batch_independent(with_batchnorm().eval(), torch.randn(4, 6))


def test_per_sample_model_passes():
    assert_batch_independent(nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 2)), torch.randn(5, 6))
"""


def test_assert_batch_independent(pytester, inner):
    pytester.makepyfile(test_batch=BATCH_INDEPENDENT)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_view_mixes_samples": "FAILED", "test_batchnorm_in_train_mode_is_usage_error": "FAILED",
        "test_batchnorm_in_eval_mode_passes": "PASSED", "test_per_sample_model_passes": "PASSED",
    }
    _assert_failure(inner, result, "test_view_mixes_samples", [
        "*TorchcheckFailure: assert_batch_independent: output 0 of sample 0 depends on the input of sample *"
        + glob.escape("(max |d out[0] / d in[") + "*" + glob.escape("]| = ") + "*); samples are mixed across the "
        "batch dimension",
        "  likely cause: a view/reshape/transpose that moves the batch dimension *",
    ])
    _assert_failure(inner, result, "test_batchnorm_in_train_mode_is_usage_error", [
        "*TorchcheckUsageError: assert_batch_independent: batch norm in training mode mixes samples by design (1); "
        "pass model.eval() or allow_batchnorm=True",
    ])


MODULES_REGISTERED = """
import torch
from torch import nn

from pytest_torchcheck import assert_modules_registered


class Hidden(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(2, 2), nn.Linear(2, 2)]
        self.heads = {"cls": nn.Linear(2, 3), "box": nn.Linear(2, 4)}
        self.temperature = torch.ones(1, requires_grad=True)
        self.fine = nn.ModuleList([nn.Linear(2, 2)])


class Registered(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
        self.heads = nn.ModuleDict({"cls": nn.Linear(2, 3)})
        self.temperature = nn.Parameter(torch.ones(1))
        self.sizes = [2, 2]


def test_hidden_members():
    assert_modules_registered(Hidden())


def test_registered_members_pass():
    assert_modules_registered(Registered())
"""


def test_assert_modules_registered(pytester, inner):
    pytester.makepyfile(test_registered=MODULES_REGISTERED)
    result = inner.run()
    assert inner.outcomes(result) == {"test_hidden_members": "FAILED", "test_registered_members_pass": "PASSED"}
    _assert_failure(inner, result, "test_hidden_members", [
        "*TorchcheckFailure: assert_modules_registered: 3 unregistered member(s) in Hidden:",
        "  Hidden.layers: plain list holding 2 Module(s); use nn.ModuleList *",
        "  Hidden.heads: plain dict holding 2 Module(s); use nn.ModuleDict *",
        "  Hidden.temperature: tensor attribute (1,) requires grad but is not a registered parameter; "
        "wrap it in nn.Parameter",
    ])


DETERMINISTIC = """
import torch
import torch.nn.functional as F
from torch import nn

from pytest_torchcheck import assert_deterministic


class EntropyDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.generator = torch.Generator()
        self.generator.seed()  # from entropy: the global seed does not reach it

    def forward(self, x):
        hidden = self.proj(x)
        keep = (torch.rand(hidden.shape, generator=self.generator) > 0.5).float()
        return {"hidden": hidden, "dropped": hidden * keep * 2.0}


class SeededDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        hidden = self.proj(x)
        return {"hidden": hidden, "dropped": F.dropout(hidden, 0.5, training=True)}


def test_entropy_seeded_dropout():
    model, x = EntropyDropout(), torch.randn(8, 4)
    assert_deterministic(lambda: model(x), model=model)


def test_global_rng_dropout_passes():
    model, x = SeededDropout(), torch.randn(8, 4)
    assert_deterministic(lambda: model(x), model=model, runs=3)
"""


def test_assert_deterministic(pytester, inner):
    pytester.makepyfile(test_determinism=DETERMINISTIC)
    result = inner.run()
    assert inner.outcomes(result) == {"test_entropy_seeded_dropout": "FAILED",
                                      "test_global_rng_dropout_passes": "PASSED"}
    _assert_failure(inner, result, "test_entropy_seeded_dropout", [
        "*TorchcheckFailure: assert_deterministic: run 1 and run 2 differ in output"
        + glob.escape("['dropped']") + " (8, 4): * of 32 elements; largest difference * at index (*, *) (* vs *)",
        "  seeded each run with 0; likely cause: randomness that the global seed does not control *",
    ])


REGISTERED_UNDERSCORE_AND_EVAL_RANDOMNESS = """
import torch
import torch.nn.functional as F
from torch import nn

from pytest_torchcheck import assert_deterministic, assert_modules_registered, assert_overfits


class PrivateList(nn.Module):
    def __init__(self):
        super().__init__()
        self._layers = [nn.Linear(2, 2), nn.Linear(2, 2)]   # never trained
        self._scale = torch.ones(1, requires_grad=True)      # never trained
        self.a = nn.Linear(2, 2)
        self._alias = [self.a]                               # an alias of a registered module: fine
        self.rnn = nn.LSTM(2, 2)                             # torch's own _flat_weights list: fine


class PrivateButRegistered(nn.Module):
    def __init__(self):
        super().__init__()
        self._layers = nn.ModuleList([nn.Linear(2, 2)])
        self._blocks = [self._layers[0]]
        self._cache = {"sizes": [2, 2]}
        self.rnn = nn.GRU(2, 2)


def test_private_list():
    assert_modules_registered(PrivateList())


def test_private_but_registered():
    assert_modules_registered(PrivateButRegistered())


class Net(nn.Module):
    def __init__(self, functional=False):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)
        self.functional = functional

    def forward(self, x):
        h = self.proj(x)
        return F.dropout(h, 0.5) if self.functional else self.drop(h)


def test_dropout_left_on_in_eval():
    model, x = Net().eval(), torch.randn(8, 4)
    model.drop.train()
    assert_deterministic(lambda: model(x))


def test_functional_dropout_ignores_eval():
    model, x = Net(functional=True).eval(), torch.randn(8, 4)
    assert_deterministic(lambda: model(x), model=model)


def test_eval_passes():
    model, x = Net().eval(), torch.randn(8, 4)
    assert_deterministic(lambda: model(x), runs=3)


def test_training_forward_with_same_seed_passes():
    model, x = Net(), torch.randn(8, 4)
    assert_deterministic(lambda: model(x))


def test_vary_seed_false_replays_the_mask():
    model, x = Net(functional=True).eval(), torch.randn(8, 4)
    assert_deterministic(lambda: model(x), vary_seed=False)


def test_softmax_before_cross_entropy():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 5), nn.Softmax(dim=1))
    assert_overfits(model, (torch.randn(16, 4), torch.randint(5, (16,))), F.cross_entropy, steps=150)


def test_plain_lr_too_low_names_no_softmax():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 5))
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    assert_overfits(model, (torch.randn(16, 4), torch.randint(5, (16,))), F.cross_entropy, opt, steps=20)
"""


def test_underscore_members_eval_randomness_and_softmax_plateau(pytester, inner):
    pytester.makepyfile(test_more=REGISTERED_UNDERSCORE_AND_EVAL_RANDOMNESS)
    result = inner.run()
    assert inner.outcomes(result) == {
        "test_private_list": "FAILED", "test_private_but_registered": "PASSED",
        "test_dropout_left_on_in_eval": "FAILED", "test_functional_dropout_ignores_eval": "FAILED",
        "test_eval_passes": "PASSED", "test_training_forward_with_same_seed_passes": "PASSED",
        "test_vary_seed_false_replays_the_mask": "PASSED", "test_softmax_before_cross_entropy": "FAILED",
        "test_plain_lr_too_low_names_no_softmax": "FAILED"}, result.stdout.str()
    _assert_failure(inner, result, "test_private_list", [
        "*TorchcheckFailure: assert_modules_registered: 2 unregistered member(s) in PrivateList:",
        "  PrivateList._layers: plain list holding 2 Module(s); use nn.ModuleList *",
        "  PrivateList._scale: tensor attribute (1,) requires grad but is not a registered parameter; *",
    ])
    assert "_alias" not in str(inner.message(result, "test_private_list").lines)
    _assert_failure(inner, result, "test_dropout_left_on_in_eval", [
        "*TorchcheckFailure: assert_deterministic: run 1 and run 2 differ in output (8, 4): *",
        "  run 1 seeded with 0, run 2 with 1 (fn is an evaluation*; likely cause: 'Net.drop' (Dropout) ran in "
        "training mode while the rest of the model was in eval mode*",
    ])
    _assert_failure(inner, result, "test_functional_dropout_ignores_eval", [
        "*likely cause: randomness that ignores the module mode: F.dropout(x, p) without training=self.training*",
    ])
    _assert_failure(inner, result, "test_softmax_before_cross_entropy", [
        "  likely cause: the model outputs probabilities (every row is >= 0 and sums to 1 over 5 classes), *"
        "cannot fall below ln(1 + 4/e) = 0.9048*",
    ])
    assert "probabilities" not in "\n".join(inner.message(result, "test_plain_lr_too_low_names_no_softmax").lines)
