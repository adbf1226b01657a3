"""TRN402 at run time (pytest_torchcheck/watch/checks/trn402_tensor_attribute_not_registered.py): a plain tensor
attribute that forward reads, left untrained by every optimizer or left behind by a cast, is reported at its
assignment in ``__init__``."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

UNTRAINED = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.scale = torch.ones(3, requires_grad=True)  # <-

    def forward(self, x):
        return self.fc(x) * self.scale

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
"""

CAST = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.offset = torch.zeros(3)  # <-
        self.index = torch.arange(3)  # an index: a dtype cast leaves it alone, rightly

    def forward(self, x):
        return (self.fc(x) + self.offset)[:, self.index]

model = Net().double()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(8, 4, dtype=torch.float64)).sum().backward()
    opt.step()
"""


def test_a_trainable_attribute_no_optimizer_holds_is_reported_at_its_assignment(tmp_path) -> None:
    watched = watch_program(tmp_path, UNTRAINED, ["TRN402"])
    assert watched.lines == [("TRN402", line_of(UNTRAINED, "# <-"))]
    [message] = watched.messages("TRN402")
    assert "`self.scale` of Net" in message and "(3,)" in message and "3 optimizer steps" in message
    assert "nn.Parameter" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_with_a_parameter_is_clean(tmp_path) -> None:
    fixed = UNTRAINED.replace("torch.ones(3, requires_grad=True)", "torch.nn.Parameter(torch.ones(3))")
    watched = watch_program(tmp_path, fixed, ["TRN402"])
    assert watched.findings == [] and watched.errors == []


def test_an_attribute_a_cast_left_behind_is_reported_at_its_assignment(tmp_path) -> None:
    watched = watch_program(tmp_path, CAST, ["TRN402"])
    assert watched.lines == [("TRN402", line_of(CAST, "# <-"))]
    [message] = watched.messages("TRN402")
    assert "`self.offset` of Net" in message and "from cpu/float32 to cpu/float64" in message
    assert "still on cpu/float32" in message and "register_buffer" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_with_a_buffer_is_clean(tmp_path) -> None:
    fixed = CAST.replace("self.offset = torch.zeros(3)", 'self.register_buffer("offset", torch.zeros(3))')
    watched = watch_program(tmp_path, fixed, ["TRN402"])
    assert watched.findings == [] and watched.errors == []


def test_a_cast_before_the_module_s_forward_uses_the_attribute_is_seen_in_a_submodule(tmp_path) -> None:
    source = """\
import torch

class Scaler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.gain = torch.full((4,), 2.0)  # <-

    def forward(self, x):
        return self.fc(x) * self.gain

model = torch.nn.Sequential(Scaler(), torch.nn.Linear(4, 1)).to(torch.float64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
model(torch.randn(8, 4, dtype=torch.float64)).sum().backward()
opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN402"])
    assert watched.lines == [("TRN402", line_of(source, "# <-"))]
    assert watched.errors == []


def test_near_misses_are_clean(tmp_path) -> None:
    source = """\
import torch

class Constant(torch.nn.Module):  # a constant kept plain, never moved nor cast: nothing happens to it
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.eps = torch.tensor(1e-5)

    def forward(self, x):
        return self.fc(x) + self.eps

class MovesItself(torch.nn.Module):  # an _apply override carries its attribute along
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.shift = torch.zeros(4)

    def _apply(self, fn, *args, **kwargs):
        super()._apply(fn, *args, **kwargs)
        self.shift = fn(self.shift)
        return self

    def forward(self, x):
        return self.fc(x) + self.shift

class ToOverride(torch.nn.Module):  # a to() override does the same
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.bias2 = torch.zeros(4)

    def to(self, *args, **kwargs):
        module = super().to(*args, **kwargs)
        self.bias2 = self.bias2.to(*args, **kwargs)
        return module

    def forward(self, x):
        return self.fc(x) + self.bias2

class Fresh(torch.nn.Module):  # tensors made inside forward, a buffer, a mask and an unread attribute
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
        self.mask = torch.ones(4, dtype=torch.bool)
        self.history = torch.zeros(4)  # bookkeeping forward never reads

    def forward(self, x):
        noise = torch.zeros(4, dtype=x.dtype)
        return (self.fc(x) - self.mean + noise) * self.mask

class ManualStep(torch.nn.Module):  # a trainable plain tensor the program updates itself, in place
    def __init__(self):
        super().__init__()
        self.w = torch.zeros(4, requires_grad=True)

    def forward(self, x):
        return x * self.w

class DataStep(torch.nn.Module):  # updated through .data, which no version counter sees
    def __init__(self):
        super().__init__()
        self.delta = torch.zeros(4, requires_grad=True)

    def forward(self, x):
        return x + self.delta

class Held(torch.nn.Module):  # a plain trainable tensor handed to the optimizer by hand
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.temperature = torch.ones(1, requires_grad=True)

    def forward(self, x):
        return self.fc(x) / self.temperature

class Frozen(torch.nn.Module):  # requires grad but no gradient ever reaches it (used under no_grad)
    def __init__(self):
        super().__init__()
        self.proto = torch.randn(4, requires_grad=True)

    def forward(self, x):
        return x @ self.proto

const = Constant()
moved = MovesItself().double()
overridden = ToOverride().to(torch.float64)
fresh = Fresh().double()
manual = ManualStep()
data_step = DataStep()
held = Held()
frozen = Frozen()
opt = torch.optim.SGD(list(const.parameters()) + list(moved.parameters()) + list(overridden.parameters())
                      + list(fresh.parameters()) + list(held.parameters()) + [held.temperature], lr=0.1)
for _ in range(5):
    opt.zero_grad()
    manual.w.grad = None
    x = torch.randn(8, 4)
    loss = const(x).sum() + moved(x.double()).sum() + overridden(x.double()).sum() + fresh(x.double()).sum()
    loss = loss + manual(x).sum() + held(x).sum() + data_step(x).pow(2).sum()
    with torch.no_grad():
        frozen(x)
    loss.backward()
    opt.step()
    with torch.no_grad():
        manual.w -= 0.1 * manual.w.grad
    data_step.delta.data.add_(data_step.delta.grad.sign(), alpha=0.01)
    data_step.delta.grad = None
const.to("cpu")  # a move that changes nothing
const(torch.randn(2, 4))
"""
    watched = watch_program(tmp_path, source, ["TRN402"])
    assert watched.findings == [] and watched.errors == []


REMADE = """\
import torch

class Noisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.reset()

    def reset(self):
        self.jitter = torch.randn(3)  # <-

    def forward(self, x):
        return self.fc(x) + self.jitter

model = Noisy().double()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    model.reset()  # new noise every step, made where the module's parameters no longer are
    opt.zero_grad()
    model(torch.randn(8, 4, dtype=torch.float64)).sum().backward()
    opt.step()
"""


def test_an_attribute_remade_on_the_old_dtype_between_the_cast_and_the_forward_is_reported(tmp_path) -> None:
    watched = watch_program(tmp_path, REMADE, ["TRN402"])
    assert watched.lines == [("TRN402", line_of(REMADE, "# <-"))]
    [message] = watched.messages("TRN402")
    assert "`self.jitter` of Noisy" in message and "still on cpu/float32" in message
    assert watched.errors == [] and watched.code == 0


def test_an_attribute_remade_where_the_parameters_are_is_clean(tmp_path) -> None:
    fixed = REMADE.replace("torch.randn(3)", "torch.randn(3, dtype=self.fc.weight.dtype)")
    watched = watch_program(tmp_path, fixed, ["TRN402"])
    assert watched.findings == [] and watched.errors == []
