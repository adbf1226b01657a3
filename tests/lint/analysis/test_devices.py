"""Whether a module value was already moved to a device before a point, and whether a move casts."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.devices import casts_dtype, is_move, moved_before
from lint_rules.analysis.model import FileModel


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def _wraps(model: FileModel) -> list[cst.Call]:
    return [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "Wrap"]


def test_moved_before_reads_the_value_its_bindings_and_earlier_statements() -> None:
    model = _model("""
        def a(dev):
            Wrap(Net().to(dev).train())          # moved in the expression itself
        def b(rank):
            net = Net().cuda(rank)
            Wrap(net)                            # bound to a moved value
        def c(dev):
            enc = Encoder()
            enc.to(dev)
            Wrap(enc)                            # an earlier move statement
        def d(dev):
            self.backbone.cuda()
            Wrap(self.backbone)                  # an attribute moved earlier
        def e(dev):
            net = Net()
            Wrap(net)                            # never moved here
            net.to(dev)
        def f(dev, flag):
            net = Net()
            if flag:
                net.to(dev)
            else:
                Wrap(net)                        # moved only on the other branch
        def g(other, dev):
            other.to(dev)
            net = Net()
            Wrap(net)                            # another value was moved
        """)
    first = [moved_before(model, w.args[0].value, w) for w in _wraps(model)]
    assert first == [True, True, True, True, False, False, False]


def test_casts_dtype_needs_a_torch_dtype_in_the_call() -> None:
    model = _model("""
        import torch
        net.to(torch.float16)
        net.to(device=dev, dtype=dtype)
        net.to(torch.device("cuda"))
        net.to(dev)
        net.cuda()
        """)
    moves = [c for c in model.nodes(cst.Call) if is_move(c)]
    assert [casts_dtype(model, c) for c in moves] == [True, True, False, False, False]


def test_built_here_needs_a_module_class_called_in_the_same_function() -> None:
    from lint_rules.analysis.devices import built_here

    model = _model("""
        import torch.nn as nn
        def a():
            Wrap(Net())                           # a class called here
        def b():
            net = nn.Sequential(nn.Linear(2, 2))
            Wrap(net)                             # bound to a torch module
        def c(net):
            Wrap(net)                             # handed in: its maker may have moved it
        def d(cfg):
            Wrap(build_model(cfg))                # a factory may move what it returns
        def e(dev):
            Wrap(Net().to(dev))                   # built and moved
        def f(net, fresh):
            if fresh:
                net = Net()
            Wrap(net)                             # handed in on one path
        """)
    assert [built_here(model, w.args[0].value, w) for w in _wraps(model)] == [True, True, False, False, False, False]


def _assigned(model: FileModel) -> dict[str, cst.BaseExpression]:
    return {a.targets[0].target.value: a.value for a in model.nodes(cst.Assign)
            if isinstance(a.targets[0].target, cst.Name)}


def test_pinned_to_accelerator_names_a_device_the_code_picks_itself() -> None:
    from lint_rules.analysis.devices import pinned_to_accelerator

    model = _model("""
        import torch
        from torch import device as Device
        GPU = "cuda:1"
        def build(scale, dev, x):
            here = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            literal = torch.zeros(3, device="cuda")
            chosen = scale * torch.eye(3, device=here)
            moved = torch.tensor([1.0, 2.0]).cuda()
            moved_to = torch.arange(4).to(Device("mps")).float() / scale
            constant = torch.ones(2, device=GPU)[0]
            local = literal.view(3, 1)
            cast_only = literal.to(torch.float16)
            handed_in = torch.zeros(3, device=dev)
            from_input = torch.ones(2, device=x.device)
            moved_away = literal.to(dev)
            on_host = torch.zeros(3, device="cpu")
            plain = torch.zeros(3)
    """)
    pinned = {name for name, value in _assigned(model).items() if pinned_to_accelerator(model, value)}
    assert pinned == {"literal", "chosen", "moved", "moved_to", "constant", "local", "cast_only"}


def test_a_device_parameter_is_pinned_when_every_construction_in_the_file_names_an_accelerator() -> None:
    from lint_rules.analysis.devices import names_accelerator

    model = _model("""
        import torch
        class Picked:
            def __init__(self, size, dev):
                self.a = dev
        class Mixed:
            def __init__(self, target):
                self.b = target
        class Starred:
            def __init__(self, where):
                self.c = where
        class Unbuilt:
            def __init__(self, place):
                self.d = place
        class Defaulted:
            def __init__(self, spot="cuda"):
                self.e = spot
        def helper(loc):
            return loc
        def build(dev, args):
            gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            Picked(3, gpu)
            Picked(size=4, dev="cuda:1")
            Mixed(gpu)
            Mixed(target=dev)
            Starred(*args)
            Defaulted()
            helper("cuda")
        """)
    values = {a.targets[0].target.attr.value: a.value for a in model.nodes(cst.Assign)
              if isinstance(a.targets[0].target, cst.Attribute)}
    pinned = {attr for attr, value in values.items() if names_accelerator(model, value)}
    # `Mixed` is also built with a device handed in, `Starred` through *args, `Unbuilt` never,
    # `Defaulted` only with its default (left to the signature), and a function's parameter is no
    # class's
    assert pinned == {"a"}
    ret = next(r for r in model.nodes(cst.Return))
    assert not names_accelerator(model, ret.value)


def test_moved_by_trainer_follows_base_classes_of_the_file() -> None:
    from lint_rules.analysis.devices import moved_by_trainer

    model = _model("""
        import lightning as L
        from pytorch_lightning import LightningModule, LightningDataModule
        from torch import nn
        class Direct(LightningModule):
            pass
        class Aliased(L.LightningModule):
            pass
        class Grandchild(Direct):
            pass
        class Mixed(SomeMixin, Grandchild):
            pass
        class Data(LightningDataModule):
            pass
        class Plain(nn.Module):
            pass
        class Unknown(ThirdPartyModule):
            pass
        """)
    moved = {c.name.value for c in model.nodes(cst.ClassDef) if moved_by_trainer(model, c)}
    assert moved == {"Direct", "Aliased", "Grandchild", "Mixed"}
