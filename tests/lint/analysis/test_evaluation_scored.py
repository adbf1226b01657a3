"""Held-out batches scored inside a training loop, and whether a mode call sets the mode for an
evaluation loop (analysis/evaluation.py), asked of the facts directly."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def _calls_of(model: FileModel, name: str) -> list[cst.Call]:
    return [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == name]


_DRAWN = """
import torch
def fit(net, opt, train_loader, test_loader, extra_loader):
    val_batches = iter(test_loader)
    for i, (x, y) in enumerate(train_loader):
        opt.zero_grad()
        crit(net(x), y).backward()
        opt.step()
        tx, ty = next(iter(test_loader))
        crit(net(tx), ty).backward()
        ex, ey = next(iter(extra_loader))
        with torch.no_grad():
            log(net(ex))
        vx, vy = next(val_batches)
        log(net(vx))
        kx, ky = next(iter(extra_loader))
        log(net(kx))
"""


def test_drawn_batch_scored_names_the_held_out_data() -> None:
    model = _model(_DRAWN)
    facts = model.fact(FileFacts)
    scored = [facts.drawn_batch_scored(c) for c in _calls_of(model, "net")]
    spelled = [model.module.code_for_node(d) if d is not None else None for d in scored]
    # net(x): the training batch; net(tx): backward() on it, a second training batch; net(ex): any
    # batch under no_grad; net(vx): a test batch; net(kx): not held out by its name, not under no_grad
    assert spelled == [None, None, "extra_loader", "test_loader", None]


def test_a_file_without_next_draws_no_batch() -> None:
    model = _model(_DRAWN.replace("next(", "first("))
    facts = model.fact(FileFacts)
    assert [facts.drawn_batch_scored(c) for c in _calls_of(model, "net")] == [None] * 5


def test_backward_after_sees_a_later_backward_in_the_iteration() -> None:
    model = _model(_DRAWN)
    facts = model.fact(FileFacts)
    net_calls = _calls_of(model, "net")
    loop = model.enclosing_loops(net_calls[0])[0]
    assert [facts.backward_after(c, loop) for c in net_calls] == [True, True, False, False, False]


def _eval_loops(model: FileModel) -> list[cst.For]:
    return [f for f in model.nodes(cst.For) if model.module.code_for_node(f.iter) == "val_loader"]


def test_mode_set_for_an_evaluation_loop() -> None:
    model = _model("""
        import torch
        def after_eval(model, val_loader):
            model.eval()
            for x in val_loader:
                model(x)
        def in_body(model, val_loader):
            for x in val_loader:
                model.eval()
                model(x)
        def never(model, val_loader):
            for x in val_loader:
                model(x)
        def deliberate_train(model, val_loader):
            model.train()
            for x in val_loader:
                model(x)
        def trained_in_between(model, val_loader, opt):
            model.train()
            loss(model(x)).backward()
            opt.step()
            for x in val_loader:
                model(x)
        def by_caller(model, val_loader):
            for x in val_loader:
                model(x)
        def caller(model, loader):
            model.eval()
            by_caller(model, loader)
    """)
    facts = model.fact(FileFacts)
    assert [facts.mode_set_for(loop) for loop in _eval_loops(model)] == [True, True, False, True, False, True]
