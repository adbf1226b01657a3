"""Phase one: what a module's summary says, from the file alone."""

from __future__ import annotations

import json
import textwrap

from lint_rules.analysis.summary import summarise_source


def summary(code: str) -> dict:
    return summarise_source(textwrap.dedent(code))


def test_classes_record_bases_module_verdict_and_forward_output() -> None:
    s = summary('''
        import torch
        import torch.nn.functional as F
        from torch import nn
        from .base import Base

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
                self.act = nn.LogSoftmax(dim=1)
            def forward(self, x):
                return self.act(self.fc(x))

        class Soft(Net):
            def forward(self, x):
                if self.training:
                    return F.softmax(self.fc(x), 1)
                return torch.softmax(self.fc(x), dim=1)

        class Mixed(Net):
            def forward(self, x, probs=False):
                if probs:
                    return self.fc(x).sigmoid()
                return self.fc(x)

        class Child(Base):
            pass

        class Plain:
            def forward(self):
                return 1
    ''')
    classes = s["classes"]
    assert classes["Net"] == {"bases": ["nn.Module"], "module": True, "forward": True, "output": "log_softmax",
                              "mode": False, "registers": [],
                              "methods": {"__init__": {"stub": False, "params": ["self"], "effects": []},
                                          "forward": {"stub": False, "params": ["self", "x"], "effects": []}}}
    assert classes["Soft"]["output"] == "softmax" and classes["Soft"]["module"] is True
    assert classes["Mixed"]["output"] is None  # two different answers: unknown, never a guess
    # Not shown to be a module by this file alone; phase two follows Base into its own file.
    assert classes["Child"] == {"bases": ["Base"], "module": False, "forward": False, "output": None,
                                "mode": None, "registers": [], "methods": {}}  # a base of another file: unknown
    assert classes["Plain"]["module"] is False and classes["Plain"]["output"] is None


def test_functions_instances_and_imports() -> None:
    s = summary('''
        import torch.nn as nn
        import torch.nn.functional as F
        import pkg.sub as alias
        from ..models import Net as Model, Head
        from .utils import *

        model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
        other = dict(a=1)

        def predict(model, x):
            return F.softmax(model(x), dim=-1)

        def maybe(model, x):
            if x is None:
                return
            return model(x)
    ''')
    assert s["functions"] == {"predict": "softmax", "maybe": None}
    assert s["instances"] == {"model": "sigmoid"}
    assert s["imports"]["Model"] == [2, "models", "Net"] and s["imports"]["Head"] == [2, "models", "Head"]
    assert s["imports"]["alias"] == [0, "pkg.sub", None] and s["imports"]["nn"] == [0, "torch.nn", None]
    json.dumps(s)  # plain JSON: it is cached on disk


def test_a_comment_or_a_body_edit_leaves_the_summary_unchanged() -> None:
    base = '''
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                return self.head(x).sigmoid()
        def train(loader):
            for x in loader:
                pass
    '''
    edited = base.replace("pass", "print(x)  # a comment").replace("class Net", "# doc\n        class Net")
    assert summary(base) == summary(edited)
    assert summary(base) != summary(base.replace(".sigmoid()", ""))


def test_unparsable_source_summarises_to_nothing() -> None:
    assert summary("class Net(nn.Module:\n") == {"classes": {}, "functions": {}, "instances": {}, "imports": {},
                                                  "stepping": [], "calls": [], "no_grad": [], "sampled_loaders": [],
                                                  "runs": {}}


def test_functions_that_step_an_optimizer_are_listed() -> None:
    s = summary("def run_epoch(model, loader, optimizer):\n    for x in loader:\n        optimizer.step()\n"
                "def schedule(scheduler):\n    scheduler.step()\n"
                "def nested(optimizer):\n    def inner():\n        optimizer.step()\n    return inner\n"
                "def train(model, loader, optimizer):\n    return run_epoch(model, loader, optimizer)\n")
    # a scheduler step and a nested function's step do not count; a caller of a stepping function does
    assert s["stepping"] == ["run_epoch", "train"]


def test_classes_record_the_names_they_register_or_none_when_computed() -> None:
    s = summary('''
        import torch
        from torch import nn

        class Fixed(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mask", torch.ones(2))
                self.register_parameter("bias", None)

        class Computed(nn.Module):
            def __init__(self, n):
                super().__init__()
                for i in range(n):
                    self.register_buffer(f"b{i}", torch.ones(1))
    ''')
    assert s["classes"]["Fixed"]["registers"] == ["bias", "mask"]
    assert s["classes"]["Computed"]["registers"] is None


def test_functions_that_return_a_loader_over_a_shuffling_distributed_sampler_are_listed() -> None:
    s = summary("""
        from torch.utils.data import DataLoader, DistributedSampler
        def build(ds):
            sampler = DistributedSampler(ds)
            return DataLoader(ds, batch_size=4, sampler=sampler)
        def inline(ds):
            return DataLoader(ds, 4, False, DistributedSampler(ds))
        def ordered(ds):
            return DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False))
        def pair(ds):
            sampler = DistributedSampler(ds)
            return DataLoader(ds, sampler=sampler), sampler
    """)
    assert s["sampled_loaders"] == ["build", "inline"]  # not without shuffling; a tuple is not a loader


def test_methods_record_stubs_parameters_and_effects_for_subclasses_and_heirs() -> None:
    s = summary('''
        import torch

        class Trainer:
            lr = 0.1

            def fit(self, loader, opt, swa=False):
                for x in loader:
                    opt.zero_grad()
                    self.loss(x).backward()
                    opt.step()
                if swa:  # an effect that the caller's argument decides
                    self.swa_opt.step()

            def _epoch(self, epoch):
                """Subclasses train one epoch."""
                raise NotImplementedError

            @property
            def device(self):
                return "cuda"
    ''')
    methods = s["classes"]["Trainer"]["methods"]
    assert methods["fit"] == {"stub": False, "params": ["self", "loader", "opt", "swa"], "effects": [
        ["clear", "$opt", True, 0, False], ["backward", None, True, 0, False], ["step", "$opt", True, 0, False],
        ["step", "self.swa_opt", False, 0, True]]}
    assert methods["_epoch"] == {"stub": True, "params": ["self", "epoch"], "effects": []}
    assert methods["lr"] is None and methods["device"] is None  # a value and a property: no method to run


def test_a_cached_summary_with_methods_of_another_shape_is_not_well_formed() -> None:
    from lint_rules.analysis.project_index import well_formed

    good = summary("class T:\n    def fit(self, opt):\n        opt.step()\n    def go(self):\n        pass\n")
    assert well_formed(good)
    for bad in ({"fit": {"stub": False, "params": ["self"]}},  # a key missing
                {"fit": {"stub": 0, "params": ["self"], "effects": []}},  # not a bool
                {"fit": {"stub": False, "params": ["self"], "effects": [["step", "$opt", False, 0]]}},  # short effect
                {"fit": "step"}, []):
        damaged = {**good, "classes": {"T": {**good["classes"]["T"], "methods": bad}}}
        assert not well_formed(damaged), bad
    old = {**good, "classes": {"T": {k: v for k, v in good["classes"]["T"].items() if k != "methods"}}}
    assert not well_formed(old)  # a summary of the previous version
