"""Gradient-accumulation facts of training.py: guards up to a region, accumulation tests,
clears that wipe the accumulated micro-batches, and Lightning's manual_backward()."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.guards import guards_within, is_accumulation_test
from lint_rules.analysis.training import BACKWARD, CLEAR, wiped_accumulations


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def _wiped_lines(src: str) -> list[int]:
    """Source lines of the clears wiped_accumulations() reports, over every loop and function."""
    model = _model(src)
    facts = model.training
    regions = {id(loop): loop for loop in facts.loops.values()}
    for ev in facts.events:
        fn = model.enclosing_function(ev.node)
        if fn is not None:
            regions.setdefault(id(fn), fn)
    lines = []
    for region in regions.values():
        for ev in wiped_accumulations(model, facts.region_events(region), region):
            lines.append(model.module.code_for_node(ev.node))
    return sorted(lines)


def test_guards_within_stop_at_the_region_and_give_up_at_an_inner_loop() -> None:
    model = _model("""
        def f(loader, accum):
            for i, x in enumerate(loader):
                a()
                if i % accum == 0:
                    if ready:
                        b()
                    else:
                        c()
                for y in x:
                    d()
        """)
    calls = {c.func.value: c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name)}
    loop = model.nodes(cst.For)[0]
    assert guards_within(model, calls["a"], loop) == []
    assert len(guards_within(model, calls["b"], loop)) == 2
    assert len(guards_within(model, calls["c"], loop)) == 2  # the else branch is guarded too
    assert guards_within(model, calls["d"], loop) is None  # runs many times per pass
    fn = model.nodes(cst.FunctionDef)[0]
    assert guards_within(model, calls["a"], fn) is None  # the loop repeats it


@pytest.mark.parametrize(("test", "expected"), [
    ("(i + 1) % accum == 0", True),
    ("step % args.gradient_accumulation_steps == 0 or last", True),
    ("self.micro_step >= self.accumulate_grad_batches", True),
    ("not should_accumulate(i)", True),
    ("torch.isfinite(loss)", False),
    ("epoch > warmup", False),
    ("accelerator.sync_gradients", False),
])
def test_accumulation_tests(test: str, expected: bool) -> None:
    model = _model(f"if {test}:\n    pass\n")
    assert is_accumulation_test(model, model.nodes(cst.If)[0].test) is expected


def test_manual_backward_is_a_backward_event() -> None:
    model = _model("""
        class Task:
            def training_step(self, batch, batch_idx):
                self.manual_backward(self.loss(batch))
        """)
    assert [e.kind for e in model.training.events] == [BACKWARD]


def test_clear_every_micro_batch_is_wiped_before_and_after_the_step() -> None:
    src = """
        import torch
        opt = torch.optim.SGD(params, lr=0.1)
        for i, x in enumerate(loader):
            opt.zero_grad()
            f(x).backward()
            if (i + 1) % accum == 0:
                opt.step()
            opt.zero_grad(set_to_none=True)
        """
    assert _wiped_lines(src) == ["opt.zero_grad()", "opt.zero_grad(set_to_none=True)"]


@pytest.mark.parametrize("src", [
    # the clear inside the step's if: correct accumulation
    """
    for i, x in enumerate(loader):
        f(x).backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    """,
    # a step every pass
    """
    for i, x in enumerate(loader):
        optimizer.zero_grad()
        f(x).backward()
        optimizer.step()
    """,
    # the clear of another optimizer
    """
    for i, x in enumerate(loader):
        opt_d.zero_grad()
        f(x).backward()
        if i % accum == 0:
            opt_g.step()
    """,
    # the if runs its own backward: a generator every n critic steps
    """
    for i, x in enumerate(loader):
        opt_g.zero_grad()
        d(x).backward()
        opt_d.step()
        if i % n_critic == 0:
            g(x).backward()
            opt_g.step()
    """,
    # model.zero_grad() while another optimizer steps every pass
    """
    for i, x in enumerate(loader):
        net_d.zero_grad()
        d(x).backward()
        opt_d.step()
        if i % n_critic == 0:
            opt_g.step()
    """,
    # the step of an inner loop; the clear belongs to the outer one
    """
    for epoch in range(3):
        optimizer.zero_grad()
        for i, x in enumerate(loader):
            f(x).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
    """,
])
def test_near_misses_are_not_wiped(src: str) -> None:
    assert _wiped_lines(src) == []


def test_clear_kinds_are_kept() -> None:
    model = _model("""
        for p in model.parameters():
            p.grad = None
        """)
    assert [e.kind for e in model.training.events] == [CLEAR]


def _trn101_lines(src: str) -> list[int]:
    from lint_rules import lint_source

    result = lint_source(textwrap.dedent(src), "accumulate.py", ["TRN101"])
    return [f.line for f in result.findings]


def test_a_helper_that_clears_every_micro_batch_is_reported_at_its_call() -> None:
    src = """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def micro_step(batch):
            opt.zero_grad()
            loss_fn(model(batch)).backward()

        def fit(loader, accum):
            for i, b in enumerate(loader):
                micro_step(b)
                if (i + 1) % accum == 0:
                    opt.step()
        """
    assert _trn101_lines(src) == [11]


def test_a_helper_that_clears_only_when_a_window_opens_is_quiet() -> None:
    src = """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def micro_step(batch, i, accum):
            if i % accum == 0:
                opt.zero_grad()
            loss_fn(model(batch)).backward()

        def fit(loader, accum):
            for i, b in enumerate(loader):
                micro_step(b, i, accum)
                if (i + 1) % accum == 0:
                    opt.step()
        """
    assert _trn101_lines(src) == []
