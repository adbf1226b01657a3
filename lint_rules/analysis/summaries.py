"""Function summaries: what calling a function of this file does, in the caller's terms.

A summary lists a function's *effects* in statement order: ``backward``,
``step``, ``clear`` (``zero_grad``), ``train`` and ``eval`` mode switches, each on
a *target* spelled relative to the function: ``$name`` for a parameter (with
any attribute path after it: ``$trainer.opt``), ``self.x`` for an attribute of
the instance, the plain dotted text for anything else. Effects of the local
functions it calls are included, applied with their arguments, up to
:data:`MAX_DEPTH` calls deep and never through a recursion.

Callers apply a summary with :meth:`Summaries.effects_at`: parameters are
replaced by the arguments' spelling, ``self.x`` by ``<receiver>.x``, and an
effect that sits under ``if <param> == <constant>:`` (or ``if <param>:``) is
dropped when the call site passes a constant that takes the other branch.

Other facts per function: ``no_grad`` (its body runs with grad disabled: a
``torch.no_grad``/``inference_mode`` decorator, or a decorator of this file that
wraps one), ``returns_mode`` (it returns a module it left in eval or train mode:
``return model.eval()``, or ``model.eval(); return model``), ``creates`` (the
``self`` attributes it assigns, through the ``self`` helpers it calls) and, built
only when asked (:meth:`Summaries.writes`), ``writes``: the parameters whose tensor
it writes in place (``x.sub_(m)``, ``x[0] = v``, ``x -= m``, ``F.relu(x,
inplace=True)``, or a helper of its own that does, up to :data:`MAX_DEPTH` calls
deep); a parameter rebound first (``x = x.clone()``) is not written.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis import names as N
from lint_rules.analysis.aliasing import ForwardAliasing
from lint_rules.analysis.dispatch import Dispatch
from lint_rules.analysis.grad_mode import GradMode
from lint_rules.analysis.kinds import OPTIMIZER, SCALER, kind_of
from lint_rules.analysis.scopes import bind_arguments, dotted, keyword_arg, subtree
from lint_rules.analysis.training import ANY, Event, TrainingFacts

if TYPE_CHECKING:
    from lint_rules.analysis.dispatch import ForeignMethod, Target
    from lint_rules.analysis.scopes import ScopeModel

BACKWARD = "backward"
STEP = "step"
CLEAR = "clear"
TRAIN = "train"
EVAL = "eval"
MAX_DEPTH = 3
# Methods that return their receiver (a module moved or switched): `model.cuda().eval()`.
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "eval", "train",
                          "requires_grad_", "share_memory"})
_UNDECIDED = object()


@dataclass(frozen=True)
class Condition:
    """The effect runs only when ``param`` compares to ``value`` as ``positive`` says.

    ``value`` is a constant, or ``_TRUTHY`` for a bare ``if param:``."""

    param: str
    value: object
    positive: bool


_TRUTHY = "<truthy>"


@dataclass(frozen=True)
class Effect:
    kind: str
    target: str | None  # $param[.path], self.x, other dotted text; None: unknown
    node: cst.CSTNode  # the call in the function that has it (or the call of a helper)
    conditions: tuple[Condition, ...] = ()
    depth: int = 0  # how many helper calls below the function it happens
    looped: bool = False  # inside a loop of the function (or of a helper): not once per call


@dataclass
class Summary:
    fn: cst.FunctionDef
    params: tuple[str, ...]
    effects: list[Effect] = field(default_factory=list)
    no_grad: bool = False
    returns_mode: str | None = None
    creates: set[str] = field(default_factory=set)
    writes: frozenset[str] | None = None  # parameters written in place; None until asked


def receiver_base(expr: cst.CSTNode) -> cst.CSTNode:
    """``model`` for ``model.cuda().to(dev)``: the module a chain of same-module calls starts at."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in _SAME_MODULE:
        expr = expr.func.value
    return expr


def mode_of_call(call: cst.Call) -> str | None:
    """``EVAL`` for ``m.eval()``/``m.train(False)``, ``TRAIN`` for ``m.train()``/``m.train(flag)``."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    if func.attr.value == "eval":
        return EVAL if not call.args else None
    if func.attr.value == "train":
        arg = keyword_arg(call, "mode") or (call.args[0] if call.args else None)
        if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False":
            return EVAL
        return TRAIN
    return None


def _constant(expr: cst.CSTNode | None) -> object:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    return _UNDECIDED


class Summaries:
    """Summaries of the functions of one file; get the shared one with ``model.fact(Summaries)``."""

    def __init__(self, model: "ScopeModel") -> None:
        self.model = model
        self._summaries: dict[int, Summary] = {}
        self._building: set[int] = set()
        self._body: dict[int, list[cst.CSTNode]] = {}
        self._helper_events: list[tuple[cst.Call, list[Event]]] | None = None
        self._helper_indices: list[int] = []
        self._helper_owners: dict[int, list[tuple[cst.Call, list[Event]]]] | None = None
        self._writing: set[int] = set()

    # ------------------------------------------------------------ lookup
    def local_function(self, func: cst.CSTNode) -> cst.FunctionDef | None:
        """The one ``def`` of this file that a Name or ``self.<method>`` calls."""
        return self.model.fact(TrainingFacts).local_function(func)

    def targets(self, func: cst.CSTNode) -> tuple["Target", ...] | None:
        """Every function a call of ``func`` may run (:meth:`Dispatch.targets`)."""
        return self.model.fact(Dispatch).targets(func)

    def training_calls_beside(self, site: cst.Call, fn: cst.FunctionDef, after: bool) -> list[cst.Call]:
        """The calls of the function that holds ``site``, after it (``after``) or before it, of a function
        of this file other than ``fn`` that trains (calls ``backward()`` or steps an optimizer, itself or
        through its helpers): ``train(model, ...)`` beside ``test(model, ...)``."""
        model = self.model
        caller = model.enclosing_function(site)
        index = model.order[id(site)]
        out = []
        for other in model.within(cst.Call, caller) if caller is not None else model.nodes(cst.Call):
            at = model.order.get(id(other), index)
            if (at <= index if after else at >= index) or model.enclosing_function(other) is not caller \
                    or not isinstance(other.func, (cst.Name, cst.Attribute)):
                continue
            trainer = self.local_function(other.func)
            if trainer is not None and trainer is not fn \
                    and any(e.kind in (BACKWARD, STEP) for e in self.of(trainer).effects):
                out.append(other)
        return out

    def steps_optimizer(self, call: cst.Call) -> bool:
        """Whether ``call`` steps an optimizer, whichever function it runs: a function of this file, every
        implementation of a ``self.<method>()`` (this file's and other project files'), or a function
        imported from another project file (:meth:`ProjectFacts.steps_optimizer`)."""
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return False
        targets = self.targets(func)
        if targets is None:
            project = getattr(self.model, "project_facts", None)
            return project is not None and project.steps_optimizer(self.model, func)
        return all(any(e.kind == STEP for e in self.of(t).effects) if isinstance(t, cst.FunctionDef)
                   else any(e[0] == STEP for e in t.entry["effects"]) for t in targets)

    def unknown_callee(self, call: cst.Call) -> bool:
        """Whether what ``call`` runs is out of sight: neither a function of this file (nor a method
        whose implementations are known) nor one of another project file: an installed package's, a
        name bound at run time. What it does (step an optimizer, set a mode) cannot be told."""
        func = call.func
        if not isinstance(func, (cst.Name, cst.Attribute)) or self.targets(func) is not None:
            return False
        project = getattr(self.model, "project_facts", None)
        return project is None or not project.defines(self.model, func)

    def own_nodes(self, fn: cst.FunctionDef) -> list[cst.CSTNode]:
        """Ordered nodes that run in ``fn``'s own body (not in nested functions or classes)."""
        found = self._body.get(id(fn))
        if found is None:
            model = self.model
            ordered = model.ordered
            found = []
            start = model.order.get(id(fn))
            # the nodes inside fn follow it in document order, one run
            for i in range(start + 1 if start is not None else len(ordered), len(ordered)):
                node = ordered[i]
                owner = model.enclosing_function(node)
                if owner is fn:
                    found.append(node)
                    continue
                while owner is not None and owner is not fn:
                    owner = model.enclosing_function(owner)
                if owner is None:
                    break
            self._body[id(fn)] = found
        return found

    def call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls in this file that call ``fn``."""
        return self.model.call_sites(fn)

    # ---------------------------------------------------------- summaries
    def of(self, fn: cst.FunctionDef) -> Summary:
        key = id(fn)
        found = self._summaries.get(key)
        if found is not None:
            return found
        params = tuple(p.name.value for p in (*fn.params.posonly_params, *fn.params.params,
                                               *fn.params.kwonly_params))
        summary = Summary(fn, params)
        if key in self._building:
            return summary  # recursion: the inner call sees no effects
        self._building.add(key)
        try:
            self._build(summary)
        finally:
            self._building.discard(key)
        self._summaries[key] = summary
        return summary

    def _build(self, s: Summary) -> None:
        fn = s.fn
        modes = self.model.fact(GradMode)
        s.no_grad = any(modes.disables(d.decorator) for d in fn.decorators)
        last_mode: dict[str, str] = {}
        clears = self._grad_resets()
        for node in self.own_nodes(fn):
            if id(node) in clears:  # `p.grad = None`, `p.grad.zero_()` over every parameter: a clear
                s.effects.append(Effect(CLEAR, None, node, self._conditions(node, fn, s.params), 0,
                                        self._looped_beyond_its_walk(node)))
                continue
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    text = dotted(t.target)
                    if text is not None and text.startswith("self.") and text.count(".") == 1:
                        s.creates.add(text)
                continue
            if isinstance(node, cst.Return) and node.value is not None:
                value = node.value
                if isinstance(value, cst.Call) and mode_of_call(value) is not None:
                    s.returns_mode = mode_of_call(value)
                else:
                    text = dotted(receiver_base(value))
                    if text is not None and text in last_mode:
                        s.returns_mode = last_mode[text]
                continue
            if not isinstance(node, cst.Call):
                continue
            own = self._own_effect(node, s.params)
            if own is not None:
                kind, target = own
                conds = self._conditions(node, fn, s.params)
                s.effects.append(Effect(kind, target, node, conds, 0, bool(self.model.enclosing_loops(node))))
                if kind in (TRAIN, EVAL) and isinstance(node.func, cst.Attribute):
                    base = dotted(receiver_base(node.func.value))
                    if base is not None:
                        last_mode[base] = kind
                continue
            targets = self.targets(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
            if not targets or any(t is fn for t in targets):
                continue
            if len(targets) == 1 and isinstance(targets[0], cst.FunctionDef):
                callee = targets[0]
                inner = self.of(callee)
                if isinstance(node.func, cst.Attribute):
                    s.creates.update(inner.creates)
                if not inner.effects:
                    continue
                applied = self.effects_at(node, callee)
            else:  # several implementations, or one of another file: what they all do
                applied = self.effects_at(node)
            if not applied:
                continue
            conds = self._conditions(node, fn, s.params)
            for eff in applied:
                if eff.depth + 1 >= MAX_DEPTH:
                    continue  # the caller applying this summary is one more call up
                target = self._relative(eff.target, s.params)
                left = tuple(c for c in eff.conditions_left if c.param in s.params)
                s.effects.append(Effect(eff.kind, target, node, conds + left, eff.depth + 1,
                                        eff.looped or bool(self.model.enclosing_loops(node))))

    def _grad_resets(self) -> set[int]:
        """The gradient resets that clear every gradient they reach, as the training facts read them
        (one answer to "is this a clear?"): ``zero_grad()`` calls are effects of their own below."""
        held = getattr(self, "_resets", None)
        if held is None:
            held = self._resets = {id(ev.node) for ev in self.model.training.events
                                   if ev.kind == CLEAR and not _is_zero_grad(ev.node)}
        return held

    def _looped_beyond_its_walk(self, reset: cst.CSTNode) -> bool:
        """A gradient reset sits in a loop other than the walk over the parameters it resets
        (``for p in model.parameters(): p.grad = None`` is one clear, not a loop of clears)."""
        target = reset.targets[0].target if isinstance(reset, cst.Assign) else reset.func.value
        root = target
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        name = root.value if isinstance(root, cst.Name) else None
        for loop in self.model.enclosing_loops(reset):
            if isinstance(loop, cst.For) and name is not None and any(
                    isinstance(n, cst.Name) and n.value == name for n in subtree(loop.target)):
                continue
            return True
        return False

    def _own_effect(self, call: cst.Call, params: tuple[str, ...]) -> tuple[str, str | None] | None:
        func = call.func
        model = self.model
        if not isinstance(func, cst.Attribute):
            if model.qualified_name(func) == "torch.autograd.backward":
                return BACKWARD, None
            return None
        method = func.attr.value
        if method == "manual_backward":
            return BACKWARD, None
        if method == "backward":
            q = model.qualified_name(func)
            if q is not None and q.startswith("torch.distributed.autograd."):
                return None
            return BACKWARD, None
        if method == "step":
            rkind = kind_of(model, func.value)
            if rkind == OPTIMIZER:
                return STEP, self._relative(dotted(func.value), params)
            if rkind == SCALER and call.args:
                return STEP, self._relative(dotted(call.args[0].value), params)
            return None
        if method == "zero_grad":
            return CLEAR, self._relative(dotted(func.value), params)
        mode = mode_of_call(call)
        if mode is not None:
            return mode, self._relative(dotted(receiver_base(func.value)), params)
        return None

    @staticmethod
    def _relative(text: str | None, params: tuple[str, ...]) -> str | None:
        """``$model.fc`` for ``model.fc`` when ``model`` is a parameter (``self`` stays ``self``)."""
        if text is None or text.startswith("$"):
            return text
        root, dot, rest = text.partition(".")
        if root in params and root != "self":
            return f"${root}{dot}{rest}"
        return text

    def _conditions(self, node: cst.CSTNode, fn: cst.FunctionDef, params: tuple[str, ...]) -> tuple[Condition, ...]:
        """The ``if`` tests on parameters that decide whether ``node`` runs."""
        out: list[Condition] = []
        child = node
        for a in self.model.ancestors(node):
            if a is fn:
                break
            if isinstance(a, cst.If) and child is not a.test:
                cond = _param_test(a.test, params)
                if cond is not None:
                    in_body = child is a.body
                    out.append(Condition(cond.param, cond.value, cond.positive if in_body else not cond.positive))
            child = a
        return tuple(out)

    # --------------------------------------------------- constructor calls
    def constructor_attributes(self, call: cst.Call) -> list[tuple[str, cst.CSTNode]]:
        """For ``Trainer(loaders, data_loader=dl)`` of a class of this file: the ``self``
        attributes its ``__init__`` sets straight from a parameter (``self.data_loader =
        data_loader``, also ``self.a, self.b = a, b``), each with the argument it gets here."""
        func = call.func
        if not isinstance(func, cst.Name):
            return []
        bindings = self.model.bindings_of(func)
        if not bindings or len(bindings) != 1 or not isinstance(bindings[0].value, cst.ClassDef):
            return []
        body = bindings[0].value.body
        init = next((st for st in (body.body if isinstance(body, cst.IndentedBlock) else ())
                     if isinstance(st, cst.FunctionDef) and st.name.value == "__init__"), None)
        if init is None:
            return []
        params = [p.name.value for p in (*init.params.posonly_params, *init.params.params)][1:]
        given: dict[str, cst.CSTNode] = {}
        for name, arg in zip(params, (a for a in call.args if a.keyword is None and not a.star)):
            given[name] = arg.value
        for arg in call.args:
            if arg.keyword is not None:
                given[arg.keyword.value] = arg.value
        out: list[tuple[str, cst.CSTNode]] = []
        for node in self.own_nodes(init):
            if not isinstance(node, cst.Assign):
                continue
            for t in node.targets:
                pairs = [(t.target, node.value)]
                if isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)) \
                        and len(t.target.elements) == len(node.value.elements):
                    pairs = [(a.value, b.value) for a, b in zip(t.target.elements, node.value.elements)]
                for target, value in pairs:
                    text = dotted(target)
                    if text is not None and text.startswith("self.") and isinstance(value, cst.Name) \
                            and value.value in given:
                        out.append((text, given[value.value]))
        return out

    # ------------------------------------------------------ in-place writes
    def writes(self, fn: cst.FunctionDef, _depth: int = 0) -> frozenset[str]:
        """The parameters of ``fn`` whose tensor it writes in place (see the module docstring)."""
        summary = self.of(fn)
        if summary.writes is not None and _depth == 0:  # deeper walks have less depth left
            return summary.writes
        if id(fn) in self._writing or _depth >= MAX_DEPTH:
            return frozenset()  # recursion, or too deep: no writes seen
        self._writing.add(id(fn))
        try:
            flow = ForwardAliasing(self.model, fn, lambda call: self.written_args(call, _depth + 1),
                                   params_are_tensors=True)
            flow.run()
        finally:
            self._writing.discard(id(fn))
        found = frozenset(flow.written_params)
        if _depth == 0:  # a walk that started deeper was cut shorter: not the whole answer
            summary.writes = found
        return found

    def written_args(self, call: cst.Call, _depth: int = 0) -> list[cst.CSTNode]:
        """The argument expressions of ``call`` that the local function it calls writes in place."""
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            return []
        fn = self.local_function(call.func)
        if fn is None:
            return []
        written = self.writes(fn, _depth)
        if not written:
            return []
        binding = self.bind(call, fn)
        return [arg for name in written if (arg := binding.get(name)) is not None]

    # ------------------------------------------------------ at call sites
    def bind(self, call: cst.Call, fn: cst.FunctionDef) -> dict[str, cst.CSTNode | None]:
        """The expression each parameter of ``fn`` gets at ``call`` (its default when not passed)."""
        return bind_arguments(call, fn)

    def effects_at(self, call: cst.Call, fn: cst.FunctionDef | None = None) -> list["BoundEffect"]:
        """The effects of the local function ``call`` calls, spelled at the call site."""
        if fn is None:
            if not isinstance(call.func, (cst.Name, cst.Attribute)):
                return []
            targets = self.targets(call.func)
            if not targets:
                return []
            if len(targets) > 1 or not isinstance(targets[0], cst.FunctionDef):
                return _agreed(call, [self.effects_at(call, t) if isinstance(t, cst.FunctionDef)
                                      else _foreign_effects(call, t) for t in targets])
            fn = targets[0]
        summary = self.of(fn)
        if not summary.effects:
            return []
        binding = self.bind(call, fn)
        out = []
        for eff in summary.effects:
            left: list[Condition] = []
            taken = True
            for cond in eff.conditions:
                verdict = _decide(cond, binding)
                if verdict is None:
                    arg = binding.get(cond.param)
                    if isinstance(arg, cst.Name):  # the caller's own parameter may decide it
                        left.append(Condition(arg.value, cond.value, cond.positive))
                elif not verdict:
                    taken = False
                    break
            if taken:
                out.append(BoundEffect(eff.kind, _spell(eff.target, binding), call, tuple(left), eff.depth,
                                       eff.looped))
        return out

    def runs_at(self, node: cst.CSTNode, fn: cst.FunctionDef, call: cst.Call) -> bool:
        """False when ``node`` of ``fn`` sits under an ``if`` on a parameter that the
        constant arguments of ``call`` decide against."""
        conditions = self._conditions(node, fn, self.of(fn).params)
        if not conditions:
            return True
        binding = self.bind(call, fn)
        return all(_decide(cond, binding) is not False for cond in conditions)

    # ------------------------------------------------- training events
    def helper_calls(self) -> list[tuple[cst.Call, list[Event]]]:
        """Calls of local helpers that run backward/step/zero_grad, with those effects as
        training events at the call (``key``: the optimizer's spelling at the call site,
        ``ANY`` for a clear of unknown target)."""
        if self._helper_events is None:
            found = []
            # helpers of this file can only run the events this file has
            if not self.model.fact(TrainingFacts).events:
                self._helper_events = found
                return found
            kinds = (BACKWARD, STEP, CLEAR)
            for call in self.model.nodes(cst.Call):
                # a helper's own loop is its own training loop, judged where it is
                effects = [e for e in self.effects_at(call) if e.kind in kinds and not e.looped]
                if effects:
                    index = self.model.order[id(call)]
                    found.append((call, [Event(e.kind, call, ANY if e.kind == CLEAR and e.target is None
                                               else e.target, index) for e in effects]))
            self._helper_events = found
            self._helper_indices = [self.model.order[id(call)] for call, _ in found]
        return self._helper_events

    def helper_events(self, region: cst.CSTNode) -> list[Event]:
        """Training events of helper calls that run once per iteration of a loop, or in a
        function's (or the module's) own body."""
        model = self.model
        out: list[Event] = []
        calls = self.helper_calls()
        if not calls:
            return out
        if isinstance(region, (cst.For, cst.While)):
            owner = model.enclosing_function(region)
            lo, hi = model.span(region)  # a call in the loop's body is inside the loop
            indices = self._helper_indices
            for call, events in calls[bisect_left(indices, lo):bisect_left(indices, hi)]:
                if model.in_loop_body(call, region) and model.enclosing_function(call) is owner:
                    out.extend(events)
        else:
            owners = self._helper_owners
            if owners is None:
                owners = self._helper_owners = {}
                for call, events in calls:
                    owners.setdefault(id(model.enclosing_function(call)), []).append((call, events))
            for call, events in owners.get(id(None if region is model.module else region), ()):
                out.extend(events)
        return out


@dataclass(frozen=True)
class BoundEffect:
    """An effect applied at a call site: ``target`` in the caller's spelling."""

    kind: str
    target: str | None
    node: cst.Call  # the call site
    conditions_left: tuple[Condition, ...] = ()
    depth: int = 0
    looped: bool = False


def _foreign_effects(call: cst.Call, method: "ForeignMethod") -> list[BoundEffect]:
    """The effects a method of another file has at ``call`` (``self.<method>(...)``): its summary's
    unconditional effects, its parameters bound to the arguments by position and keyword."""
    params = method.entry["params"]
    binding: dict[str, cst.CSTNode | None] = {}
    if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        binding[params[0]] = call.func.value
        params = params[1:]
    positional = [a for a in call.args if a.keyword is None]
    for name, arg in zip(params, positional):
        if arg.star:
            break
        binding[name] = arg.value
    for arg in call.args:
        if arg.keyword is not None:
            binding[arg.keyword.value] = arg.value
    out = []
    for kind, target, looped, depth, conditional in method.entry["effects"]:
        spelled = _spell(target, binding)
        # an argument left to its default (unknown here) is no target: the effect is left out, not widened
        if not conditional and (spelled is not None or target is None):
            out.append(BoundEffect(kind, spelled, call, (), depth, looped))
    return out


def _agreed(call: cst.Call, per_target: list[list[BoundEffect]]) -> list[BoundEffect]:
    """The effects every target of ``call`` has, in the order they all have them: a fact of every
    implementation is a fact of the call. Effects that only some callers' arguments decide, and any
    when the targets order them differently, are left out."""
    keyed = [[e for e in effects if not e.conditions_left] for effects in per_target]
    if not keyed or any(not effects for effects in keyed):
        return []
    common = set.intersection(*({(e.kind, e.target) for e in effects} for effects in keyed))
    orders = [[(e.kind, e.target) for e in effects if (e.kind, e.target) in common] for effects in keyed]
    first = _squash(orders[0])
    if any(_squash(order) != first for order in orders[1:]):
        return []
    depth: dict[tuple, int] = {}
    looped: dict[tuple, bool] = {}
    for effects in keyed:
        for e in effects:
            key = (e.kind, e.target)
            depth[key] = max(depth.get(key, 0), e.depth)
            looped[key] = looped.get(key, False) or e.looped
    return [BoundEffect(kind, target, call, (), depth[(kind, target)], looped[(kind, target)])
            for kind, target in first]


def _squash(order: list[tuple]) -> list[tuple]:
    """``order`` with repeats in a row counted once (two steps of one optimizer in a row are one fact)."""
    return [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]


def _spell(target: str | None, binding: dict[str, cst.CSTNode | None]) -> str | None:
    if target is None:
        return None
    if target.startswith("$"):
        root, dot, rest = target[1:].partition(".")
        arg = binding.get(root)
        text = dotted(receiver_base(arg)) if arg is not None else None
        if text is None:
            return None
        return f"{text}{dot}{rest}"
    if target.startswith("self."):
        receiver = binding.get("self")
        if receiver is None:
            return None
        text = dotted(receiver)
        return None if text is None else f"{text}{target[4:]}"
    return target


def _decide(cond: Condition, binding: dict[str, cst.CSTNode | None]) -> bool | None:
    """Whether ``cond`` holds for the arguments of a call; None when they do not say."""
    arg = binding.get(cond.param)
    value = _constant(arg) if arg is not None else _UNDECIDED
    if value is _UNDECIDED:
        return None
    holds = bool(value) if cond.value == _TRUTHY else value == cond.value
    return holds == cond.positive


def _param_test(test: cst.BaseExpression, params: tuple[str, ...]) -> Condition | None:
    """``param == "x"`` / ``param != "x"`` / ``param`` / ``not param`` as a condition."""
    if isinstance(test, cst.Name) and test.value in params:
        return Condition(test.value, _TRUTHY, True)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _param_test(test.expression, params)
        return None if inner is None else Condition(inner.param, inner.value, not inner.positive)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, comp = test.left, test.comparisons[0]
        right = comp.comparator
        if not (isinstance(left, cst.Name) and left.value in params):
            left, right = right, left
        value = _constant(right)
        if isinstance(left, cst.Name) and left.value in params and value is not _UNDECIDED:
            if isinstance(comp.operator, (cst.Equal, cst.Is)):
                return Condition(left.value, value, True)
            if isinstance(comp.operator, (cst.NotEqual, cst.IsNot)):
                return Condition(left.value, value, False)
    return None


def _is_zero_grad(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "zero_grad"
