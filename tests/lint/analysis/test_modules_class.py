"""One answer to "is this an nn.Module class?" for every rule."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.autograd_flow import class_has_base, is_torch_module_class
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.modules import ModuleFacts

_SRC = """
import pytorch_lightning as pl
import lightning as L
import torch
from torch import nn

class A(pl.LightningModule): pass
class B(L.LightningModule): pass
class C(nn.Module): pass
class D(C): pass
class E(nn.Parameter): pass
class F(object): pass
"""


def test_lightning_and_torch_modules_are_module_classes_everywhere() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(ModuleFacts)
    classes = {c.name.value: c for c in model.nodes(cst.ClassDef)}
    shared = {name: facts.is_module_class(c) for name, c in classes.items()}
    by_base = {name: class_has_base(model, c, is_torch_module_class) for name, c in classes.items()}
    expected = {"A": True, "B": True, "C": True, "D": True, "E": False, "F": False}
    assert shared == expected
    assert by_base == expected
