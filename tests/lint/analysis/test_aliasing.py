"""In-place aliasing facts of one forward() body."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.aliasing import ForwardAliasing
from lint_rules.analysis.model import FileModel


def _flow(src: str) -> tuple[FileModel, ForwardAliasing]:
    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    fn = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "forward")
    flow = ForwardAliasing(model, fn)
    flow.run()
    return model, flow


def _lines(model: FileModel, nodes: list[cst.CSTNode]) -> list[str]:
    return [model.module.code_for_node(n).strip() for n in nodes]


def test_write_to_an_alias_read_later() -> None:
    model, flow = _flow("""
        import torch
        class B(torch.nn.Module):
            def forward(self, x):
                y = torch.relu(x)
                shortcut = y
                y.mul_(2)
                return y + shortcut
        """)
    assert _lines(model, flow.aliased_writes) == ["y.mul_(2)"]
    assert flow.input_writes == []


def test_write_to_the_input() -> None:
    model, flow = _flow("""
        import torch
        class B(torch.nn.Module):
            def forward(self, x):
                x.add_(1)
                return x
        """)
    assert _lines(model, flow.input_writes) == ["x.add_(1)"]


def test_write_to_a_fresh_tensor_is_no_fact() -> None:
    model, flow = _flow("""
        import torch
        class B(torch.nn.Module):
            def forward(self, x):
                out = self.conv(x)
                out += x
                return torch.relu_(out)
        """)
    assert flow.aliased_writes == [] and flow.input_writes == []


def _helper_flow(src: str) -> tuple[FileModel, ForwardAliasing]:
    from lint_rules.analysis.summaries import Summaries

    model = FileModel(cst.parse_module(textwrap.dedent(src)))
    fn = next(f for f in model.nodes(cst.FunctionDef) if f.name.value == "forward")
    flow = ForwardAliasing(model, fn, model.fact(Summaries).written_args)
    flow.run()
    return model, flow


def test_a_helper_that_writes_its_argument_writes_at_the_call() -> None:
    model, flow = _helper_flow("""
        import torch
        class B(torch.nn.Module):
            def _center_(self, t):
                t -= t.mean()
            def forward(self, x):
                h = self.conv(x)
                skip = h
                self._center_(h)
                self._center_(x)
                return self.net(x) + h + skip
        """)
    assert _lines(model, flow.aliased_writes) == ["self._center_(h)"]
    assert _lines(model, flow.input_writes) == ["self._center_(x)"]


def test_a_helper_that_copies_first_or_fills_a_dict_writes_nothing_of_the_callers() -> None:
    model, flow = _helper_flow("""
        import torch
        class B(torch.nn.Module):
            def _center(self, t):
                t = t.clone()
                t -= t.mean()
                return t
            def _remember(self, cache, k):
                cache["k"] = k
            def forward(self, x, cache=None):
                skip = x
                y = self._center(x)
                self._remember(cache, y)
                return y + skip
        """)
    assert flow.aliased_writes == [] and flow.input_writes == []
