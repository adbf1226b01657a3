"""TRN403 at run time (pytest_torchcheck/watch/checks/trn403_forward_called_directly.py): ``module.forward(x)``
called directly on a module with forward hooks is reported at that line; ``super().forward`` and hook-free
modules are not."""

from __future__ import annotations

from tests.plugin.watch_helpers import line_of, watch_program

BUGGY = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)

def record(module, inputs, output):
    seen.append(output.detach())

seen = []
model = Net()
model.register_forward_hook(record)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = model.forward(torch.randn(8, 4)).sum()  # <-
    loss.backward()
    opt.step()
"""


def test_forward_called_directly_past_a_hook_is_reported_at_its_line(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY, ["TRN403"])
    assert watched.lines == [("TRN403", line_of(BUGGY, "# <-"))]
    [message] = watched.messages("TRN403")
    assert "Net.forward() called directly skips the 1 forward hook" in message and "`record`" in message
    assert watched.errors == [] and watched.code == 0


def test_its_fixed_twin_calling_the_module_is_clean(tmp_path) -> None:
    watched = watch_program(tmp_path, BUGGY.replace("model.forward(", "model("), ["TRN403"])
    assert watched.findings == [] and watched.errors == []


def test_a_pre_hook_registered_before_the_first_call_of_a_submodule_is_seen(tmp_path) -> None:
    source = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)
        self.body.register_forward_pre_hook(lambda m, args: (args[0] * 2,))

    def forward(self, x):
        return self.head(self.body.forward(x))  # <-

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN403"])
    assert watched.lines == [("TRN403", line_of(source, "# <-"))]
    assert "Linear.forward()" in watched.messages("TRN403")[0]
    assert watched.errors == []
    import torch

    # the wrapped class's forward is torch's own again once the watch ended
    assert not hasattr(torch.nn.Linear.forward, "__torchcheck_forward__")


def test_near_misses_are_clean(tmp_path) -> None:
    source = """\
import torch

class Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

class Scaled(Base):  # super().forward() inside the subclass's forward: its module is inside its call
    def forward(self, x):
        return super().forward(x) * 2

class Plain(torch.nn.Module):  # no hooks: a direct forward skips nothing
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

hooked = Scaled()
hooked.register_forward_hook(lambda m, i, o: None)
other = Base()
other.register_forward_pre_hook(lambda m, args: None)
plain = Plain()
opt = torch.optim.SGD(list(hooked.parameters()) + list(plain.parameters()) + list(other.parameters()), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    x = torch.randn(8, 4)
    loss = hooked(x).sum() + plain.forward(x).sum() + other(x).sum()
    loss = loss + plain.fc.forward(x).sum()  # Linear without hooks
    loss.backward()
    opt.step()
"""
    watched = watch_program(tmp_path, source, ["TRN403"])
    assert watched.findings == [] and watched.errors == []
