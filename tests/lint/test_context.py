"""Facts from lint_rules.analysis.context: tests of a pattern, code under a TorchScript check."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.context import in_test, under_scripting_check
from lint_rules.analysis.model import FileModel


def _calls(src: str) -> tuple[FileModel, dict[str, cst.Call]]:
    """The model, and every call to a function named ``probe_<label>`` by its label."""
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    calls = {}
    for node in model.ordered:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value.startswith("probe_"):
            calls[node.func.value[len("probe_"):]] = node
    return model, calls


SRC = """
import unittest
import torch
from torch.jit import is_scripting

def test_shapes():
    probe_pytest()

class TestModel:
    def check(self):
        probe_test_class()

class Cases(unittest.TestCase):
    def helper(self):
        probe_unittest()

def train():
    probe_plain()
    if torch.jit.is_scripting():
        probe_scripting()
    else:
        probe_scripting_else()
    if not is_scripting() and flag:
        probe_imported_check()
    x = probe_ifexp() if torch.jit.is_tracing() else 0
    if torch.cuda.is_available():
        probe_other_if()
    if torch.jit.is_scripting():
        def inner():
            probe_nested_function()
"""


@pytest.mark.parametrize(("label", "expected"), [
    ("pytest", True), ("test_class", True), ("unittest", True), ("plain", False), ("scripting", False)])
def test_in_test(label, expected):
    model, calls = _calls(SRC)
    assert in_test(model, calls[label]) is expected


@pytest.mark.parametrize(("label", "expected"), [
    ("scripting", True), ("scripting_else", True), ("imported_check", True), ("ifexp", True),
    ("plain", False), ("other_if", False), ("nested_function", False), ("pytest", False)])
def test_under_scripting_check(label, expected):
    model, calls = _calls(SRC)
    assert under_scripting_check(model, calls[label]) is expected
