"""Training-loop facts: backward/step/zero_grad events and the loops around them.

An *event* is a call that matters to the order of a training step:

* ``backward``: ``<expr>.backward(...)`` (``loss.backward()``,
  ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``),
  ``self.manual_backward(loss)`` (Lightning's manual optimisation) or
  ``torch.autograd.backward``;
* ``step``: ``opt.step()`` on an optimizer, or ``scaler.step(opt)``;
* ``clear``: ``opt.zero_grad()``, ``model.zero_grad()``, ``p.grad = None``,
  ``p.grad.zero_()``.

A *training loop* is a ``for``/``while`` whose body (through nested blocks and
loops, not nested functions) holds a backward or a step. A *step loop* holds
one directly (not only through an inner loop); an *epoch loop* holds a training
loop.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.guards import guards_within, is_accumulation_test
from lint_rules.analysis.kinds import OPTIMIZER, SCALER, kind_of
from lint_rules.analysis.scopes import DEF, dotted, is_none, subtree

if TYPE_CHECKING:
    from lint_rules.analysis.scopes import ScopeModel as FileModel

BACKWARD = "backward"
STEP = "step"
CLEAR = "clear"
ANY = "*"  # a clear that covers every optimizer (model.zero_grad(), p.grad = None)


@dataclass(frozen=True)
class Event:
    kind: str
    node: cst.CSTNode
    key: str | None  # the optimizer's spelling for step/clear; ANY for a global clear
    index: int  # document order


def _key(model: "FileModel", expr: cst.CSTNode) -> str:
    text = dotted(expr)
    if text is not None:
        return text
    return model.module.code_for_node(expr)


class TrainingFacts:
    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self.events: list[Event] = []
        Call, Assign = cst.Call, cst.Assign
        for node in model.ordered:
            tp = type(node)  # exact types: isinstance against LibCST's ABC-derived classes is slow
            if tp is Call:
                ev = self._call_event(node)
            elif tp is Assign:
                ev = self._assign_event(node)
            else:
                continue
            if ev is not None:
                self.events.append(ev)
        self._closures: set[int] | None = None
        self._step_functions: set[int] | None = None
        self._indices = [ev.index for ev in self.events]  # ascending: events are in document order
        self._by_function: dict[int, list[Event]] | None = None
        # Innermost loop (within the same function) of every event, and loop -> events.
        self.loop_events: dict[int, list[Event]] = {}
        self.direct_events: dict[int, list[Event]] = {}
        self.loops: dict[int, cst.CSTNode] = {}
        for ev in self.events:
            loops = model.enclosing_loops(ev.node)
            for i, loop in enumerate(loops):
                self.loops[id(loop)] = loop
                self.loop_events.setdefault(id(loop), []).append(ev)
                if i == 0:
                    self.direct_events.setdefault(id(loop), []).append(ev)

    # -------------------------------------------------------------- events
    def _call_event(self, call: cst.Call) -> Event | None:
        model = self.model
        func = call.func
        idx = model.order[id(call)]
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "manual_backward":
                return Event(BACKWARD, call, None, idx)
            if method == "backward":
                q = model.qualified_name(func)
                if q is not None and q.startswith("torch.distributed.autograd."):
                    # Writes into a per-iteration distributed autograd context, not .grad.
                    return None
                return Event(BACKWARD, call, None, idx)
            if method == "step":
                receiver = func.value
                rkind = kind_of(model, receiver)
                if rkind == OPTIMIZER:
                    return Event(STEP, call, _key(model, receiver), idx)
                if rkind == SCALER and call.args:
                    return Event(STEP, call, _key(model, call.args[0].value), idx)
                return None
            if method == "zero_grad":
                receiver = func.value
                if kind_of(model, receiver) == OPTIMIZER:
                    return Event(CLEAR, call, _key(model, receiver), idx)
                return Event(CLEAR, call, ANY, idx)
            if method in ("zero_", "detach_") or (method == "fill_" and call.args and _is_zero(call.args[0].value)):
                base = func.value
                if isinstance(base, cst.Attribute) and base.attr.value == "data":
                    base = base.value
                if isinstance(base, cst.Attribute) and base.attr.value == "grad" and method != "detach_" \
                        and not self._selective(call):
                    return Event(CLEAR, call, ANY, idx)
            return None
        q = model.qualified_name(func)
        if q == "torch.autograd.backward":
            return Event(BACKWARD, call, None, idx)
        return None

    def _assign_event(self, node: cst.Assign) -> Event | None:
        if not is_none(node.value):
            return None
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Attribute) and target.attr.value == "grad" and not self._selective(node):
                return Event(CLEAR, node, ANY, self.model.order[id(node)])
        return None

    def _selective(self, node: cst.CSTNode) -> bool:
        """A gradient reset that picks its parameters (``for name, p in model.named_parameters():
        if "prototypes" in name: p.grad = None``): a deliberate freeze of those, not a clear of the
        step's gradients. A test of the gradient itself (``if p.grad is not None:``) or of whether the
        parameter trains picks nothing."""
        model = self.model
        loops = model.enclosing_loops(node)
        if not loops or not isinstance(loops[0], cst.For):
            return False
        loop = loops[0]
        targets = {n.value for n in subtree(loop.target) if isinstance(n, cst.Name)}
        for anc in model.ancestors(node):
            if anc is loop:
                return False
            if isinstance(anc, cst.If) and not _about_the_gradient(anc.test) \
                    and any(isinstance(n, cst.Name) and n.value in targets for n in subtree(anc.test)):
                return True
        return False

    # ------------------------------------------------------ step functions
    def step_closures(self) -> set[int]:
        """FunctionDefs passed to an optimizer step (``opt.step(closure)``): run inside the step."""
        if self._closures is None:
            out: set[int] = set()
            for ev in self.events:
                if ev.kind == STEP and isinstance(ev.node, cst.Call):
                    for arg in ev.node.args:
                        fn = self.local_function(arg.value)
                        if fn is not None:
                            out.add(id(fn))
            self._closures = out
        return self._closures

    def per_iteration_step_functions(self) -> set[int]:
        """Functions that call backward()/step() outside any loop of their own and are
        called from inside a loop in this file (``self._run_batch(x, y)`` in the batch loop)."""
        if self._step_functions is None:
            direct: set[int] = set()
            for ev in self.events:
                if ev.kind in (BACKWARD, STEP) and not self.model.enclosing_loops(ev.node):
                    fn = self.model.enclosing_function(ev.node)
                    if isinstance(fn, cst.FunctionDef):
                        direct.add(id(fn))
            out: set[int] = set()
            if direct:
                for call in self.model.nodes(cst.Call):
                    fn = self.local_function(call.func)
                    if fn is not None and id(fn) in direct and self.model.enclosing_loops(call):
                        out.add(id(fn))
            self._step_functions = out
        return self._step_functions

    def local_function(self, expr: cst.CSTNode) -> cst.FunctionDef | None:
        """The FunctionDef a Name or ``self.method`` refers to, when it is defined in this file."""
        return self.model.local_function(expr)

    # ------------------------------------------------------------- indexes
    def events_within(self, container: cst.CSTNode) -> list[Event]:
        """Events inside ``container``, in document order (found by position, not by a scan)."""
        return self.model.sorted_within(self.events, self._indices, container, _node_of)

    def events_between(self, start: int, end: int) -> list[Event]:
        """Events whose index is strictly between ``start`` and ``end``."""
        indices = self._indices
        return self.events[bisect_left(indices, start + 1):bisect_left(indices, end)]

    def function_events(self, fn: cst.CSTNode | None) -> list[Event]:
        """Events whose :meth:`~ScopeModel.enclosing_function` is ``fn`` (None: module level)."""
        groups = self._by_function
        if groups is None:
            groups = self._by_function = {}
            for ev in self.events:
                groups.setdefault(id(self.model.enclosing_function(ev.node)), []).append(ev)
        return groups.get(id(fn), [])

    # --------------------------------------------------------------- loops
    def is_training_loop(self, loop: cst.CSTNode) -> bool:
        return any(e.kind in (BACKWARD, STEP) for e in self.loop_events.get(id(loop), ()))

    def is_step_loop(self, loop: cst.CSTNode) -> bool:
        return any(e.kind in (BACKWARD, STEP) for e in self.direct_events.get(id(loop), ()))

    def file_trains(self) -> bool:
        """This file trains: it steps an optimizer or calls backward(), or calls a function of
        another project file that steps one (``train(model, loader, opt)`` imported from
        ``train.py``). Answered once per file."""
        found = getattr(self, "_file_trains", None)
        if found is None:
            found = self._file_trains = self._trains()
        return found

    def _trains(self) -> bool:
        if any(e.kind in (BACKWARD, STEP) for e in self.events):
            return True
        model = self.model
        project = getattr(model, "project_facts", None)
        if project is None:
            return False
        return any(isinstance(c.func, (cst.Name, cst.Attribute)) and project.steps_optimizer(model, c.func)
                   for c in model.nodes(cst.Call))

    def training_loops(self) -> list[cst.CSTNode]:
        return [loop for key, loop in self.loops.items() if self.is_training_loop(loop)]

    def is_epoch_loop(self, loop: cst.CSTNode) -> bool:
        """A loop around a training loop."""
        model = self.model
        return any(self.is_training_loop(other)
                   for tp in (cst.For, cst.While) for other in model.within(tp, loop))

    def region_events(self, region: cst.CSTNode) -> list[Event]:
        """Events of one loop iteration, or of one function body, in statement order."""
        if isinstance(region, (cst.For, cst.While)):
            return sorted(self.loop_events.get(id(region), ()), key=lambda e: e.index)
        return list(self.function_events(None if region is self.model.module else region))

    def _region_of_function(self, node: cst.CSTNode) -> cst.CSTNode:
        fn = self.model.enclosing_function(node)
        return fn if fn is not None else self.model.module


def wiped_accumulations(model: "FileModel", events: list[Event], region: cst.CSTNode) -> list[Event]:
    """Clears that run on every pass through ``region`` (a loop body, or a per-batch function
    such as a Lightning ``training_step``) while the ``step()`` they clear for runs only under
    a gradient-accumulation condition, with the ``backward()`` outside it: each pass wipes the
    micro-batches accumulated so far, and the step sees only the last one."""
    guards = {id(e.node): guards_within(model, e.node, region) for e in events}
    always_steps = any(e.kind == STEP and guards[id(e.node)] == [] for e in events)
    out: list[Event] = []
    for clear in events:
        if clear.kind != CLEAR or guards[id(clear.node)] != []:
            continue
        if clear.key == ANY and always_steps:
            continue  # model.zero_grad() may belong to the optimizer that steps every pass
        for step in events:
            if step.kind != STEP or (clear.key != ANY and step.key != clear.key):
                continue
            accum = next((g for g in guards[id(step.node)] or () if is_accumulation_test(model, g.test)), None)
            if accum is None:
                continue
            backwards = [e for e in events if e.kind == BACKWARD]
            # a backward inside the `if` is its own step (a GAN's generator every n critic steps)
            if backwards and not any(model.is_inside(b.node, accum) for b in backwards):
                out.append(clear)
                break
    return out


def _node_of(event: Event) -> cst.CSTNode:
    return event.node


def _is_zero(expr: cst.CSTNode) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0.0


def _about_the_gradient(test: cst.BaseExpression) -> bool:
    """``p.grad is not None``, ``p.requires_grad``, ``not p.requires_grad``: a test of whether the
    parameter has or takes a gradient."""
    for node in subtree(test):
        if isinstance(node, cst.Attribute) and node.attr.value in ("grad", "requires_grad"):
            return True
    return False
