"""What a module's methods do with a tensor attribute after construction: moved where read, updated
from its own value at run time, written into, differentiated against, created only when None."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.tensor_state import (accumulated_at_run_time, created_if_none, differentiated_against,
                                              moved_where_read, queued_at_run_time, written_at_run_time)


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def _class(model: FileModel, name: str) -> cst.ClassDef:
    return next(c for c in model.nodes(cst.ClassDef) if c.name.value == name)


def _only_init(fn: cst.FunctionDef) -> bool:
    return fn.name.value == "__init__"


def _lines(model: FileModel, nodes: list[cst.CSTNode]) -> list[int]:
    text = model.module.code
    return [text[:text.index(model.module.code_for_node(n))].count("\n") + 1 for n in nodes]


def test_moved_where_read_follows_moves_of_the_attribute_and_of_values_made_from_it() -> None:
    model = _model("""
        class Rebound:
            def __init__(me):
                me.cache = make()
            def forward(me, q):
                me.cache = me.cache.to(q)
        class Chained:
            def __init__(self):
                self.w = make()
            def forward(self, logits):
                return logits * self.w.view(1, -1).to(logits.device)
        class Typed:
            def __init__(self):
                self.table = make()
            def step(self, x):
                return self.table[0].type_as(x) + self.table.cuda()
        class CastOnly:
            def __init__(self):
                self.w = make()
            def forward(self, x):
                return x * self.w.to(torch.float16)
        class OtherAttr:
            def __init__(self):
                self.a = make()
                self.b = make()
            def forward(self, x):
                return self.a * self.b.to(x.device) * other.a.to(x.device)
    """)
    assert moved_where_read(model, _class(model, "Rebound"), "cache")
    assert moved_where_read(model, _class(model, "Chained"), "w")
    assert moved_where_read(model, _class(model, "Typed"), "table")
    assert not moved_where_read(model, _class(model, "CastOnly"), "w")  # a dtype cast: same device
    assert not moved_where_read(model, _class(model, "OtherAttr"), "a")  # b moved, other.a is not self's
    assert moved_where_read(model, _class(model, "OtherAttr"), "b")


def test_accumulated_at_run_time_finds_updates_from_the_old_value_outside_construction() -> None:
    model = _model("""
        class Stats:
            def __init__(self, n):
                self.count = zeros(n)
                self.count[0] += 1                        # construction: filling, not updating
            def observe(this, arm, r):
                this.count[arm] += 1
                this.total.add_(r)
                this.avg = this.avg * 0.9 + r * 0.1
                this.avg = -this.avg + r
            def reset(self):
                self.count.zero_()
                self.total.copy_(self.fresh)
                self.avg = self.avg.to(self.dev)
                self.avg = fresh(self.avg) + 1
                self.count[3] = 0
    """)
    stats = _class(model, "Stats")
    assert _lines(model, accumulated_at_run_time(model, stats, "count", _only_init)) == [7]
    assert _lines(model, accumulated_at_run_time(model, stats, "total", _only_init)) == [8]
    assert _lines(model, accumulated_at_run_time(model, stats, "avg", _only_init)) == [9, 10]
    # the same class with observe() taken for construction: nothing left that updates at run time
    assert accumulated_at_run_time(model, stats, "count", lambda fn: fn.name.value != "reset") == []


def test_written_at_run_time_adds_item_stores_and_in_place_refills() -> None:
    model = _model("""
        class Queue:
            def __init__(self):
                self.bank = None
                self.ptr = None
                self.noise = None
                self.mask = None
            def push(self, batch, i):
                self.bank[:, i:i + 4] = batch
                self.ptr.data.fill_(i)
                self.noise.requires_grad_(False)
                self.mask = make(batch)
    """)
    queue = _class(model, "Queue")
    assert written_at_run_time(model, queue, "bank", _only_init)
    assert written_at_run_time(model, queue, "ptr", _only_init)
    assert not written_at_run_time(model, queue, "noise", _only_init)  # a flag, not the values
    assert not written_at_run_time(model, queue, "mask", _only_init)  # rebound: a new tensor
    assert not accumulated_at_run_time(model, queue, "bank", _only_init)


def test_differentiated_against_reads_the_inputs_of_autograd_grad() -> None:
    model = _model("""
        import torch
        from torch import autograd
        class Penalty:
            def __init__(self):
                self.scale = make()
                self.other = make()
            def forward(self, y):
                g = autograd.grad(loss(y * self.scale), [self.scale], create_graph=True)
                h = torch.autograd.grad(outputs=loss(y * self.other), inputs=y)
                return g, h
        class ByKeyword:
            def __init__(self):
                self.w = make()
            def forward(self, y):
                return torch.autograd.grad(loss(y), inputs=(self.w,))
    """)
    assert differentiated_against(model, _class(model, "Penalty"), "scale")
    assert not differentiated_against(model, _class(model, "Penalty"), "other")  # only an output's part
    assert differentiated_against(model, _class(model, "ByKeyword"), "w")


def test_created_if_none_is_the_branch_under_an_is_none_test_only() -> None:
    model = _model("""
        class Ema:
            def update(self, m):
                if self.avg is None:
                    self.avg = m
                else:
                    self.avg = self.avg * 0.9 + m
                if self.avg is None or m.shape != self.avg.shape:
                    self.avg = m
                if self.other is None:
                    self.avg = m
    """)
    assigns = [a for a in model.nodes(cst.Assign)]
    assert [created_if_none(model, a, "avg") for a in assigns] == [True, False, False, False]


def test_queued_at_run_time_needs_a_position_the_module_keeps_and_moves_on() -> None:
    model = _model("""
        class Moco:
            def __init__(self):
                self.queue = make()
                self.queue_ptr = make()
            def enqueue(self, keys):
                n = keys.shape[0]
                ptr = int(self.queue_ptr)
                self.queue[:, ptr:ptr + n] = keys.T
                self.queue_ptr[0] = (ptr + n) % 4096
        class Memory:
            def __init__(me):
                me.mem = make()
                me.idx = 0
            def add(me, x):
                me.mem[me.idx] = x
                me.idx = (me.idx + 1) % 10
        class KvCache:
            def __init__(self):
                self.k = make()
                self.limit = 8
            def forward(self, k, start):
                self.k[:, start:start + k.shape[1]] = k
                self.k[:, :self.limit] = k
        class Filled:
            def __init__(self, n):
                self.table = make()
                self.pos = 0
                self.table[self.pos] = 1
                self.pos += 1
    """)
    assert queued_at_run_time(model, _class(model, "Moco"), "queue", _only_init)
    assert queued_at_run_time(model, _class(model, "Memory"), "mem", _only_init)
    # an index handed in, or an attribute that only construction sets: no queue
    assert not queued_at_run_time(model, _class(model, "KvCache"), "k", _only_init)
    assert not queued_at_run_time(model, _class(model, "Filled"), "table", _only_init)


def test_read_at_run_time_needs_a_read_outside_construction() -> None:
    from lint_rules.analysis.tensor_state import read_at_run_time

    model = _model("""
        class Holder:
            def __init__(me, n):
                me.used = make(n)
                me.written = make(n)
                me.built = make(n)
                me.total = me.built.sum()
            def step(me, x):
                me.written = x
                return x + me.used[0]
        """)
    holder = _class(model, "Holder")
    found = {a for a in ("used", "written", "built") if read_at_run_time(model, holder, a, _only_init)}
    assert found == {"used"}


def test_scalar_tensor_is_a_tensor_built_from_one_number() -> None:
    from lint_rules.analysis.tensor_state import scalar_tensor

    model = _model("""
        import torch
        rates = [0.1, 0.2]
        a = torch.tensor(0.5)
        b = torch.tensor(-1).float()
        c = torch.as_tensor(rate)
        d = torch.tensor([0.5, 0.25])
        e = torch.tensor(rates)
        f = torch.Tensor(3, 4)
        g = torch.zeros(())
        """)
    values = {a.targets[0].target.value: a.value for a in model.nodes(cst.Assign)}
    assert {name for name, v in values.items() if scalar_tensor(model, v)} == {"a", "b", "c"}


def test_restores_own_state_reads_the_checkpoint_methods_a_class_overrides() -> None:
    from lint_rules.analysis.tensor_state import restores_own_state

    model = _model("""
        class Restoring:
            def load_state_dict(self, sd, strict=True):
                pass
        class Saving:
            def _save_to_state_dict(self, destination, prefix, keep_vars):
                pass
        class Plain:
            def forward(self, x):
                return x
            def load(self, path):
                pass
        """)
    assert [restores_own_state(_class(model, n)) for n in ("Restoring", "Saving", "Plain")] == [True, True, False]
