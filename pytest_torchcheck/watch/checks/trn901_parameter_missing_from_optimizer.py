"""TRN901 (run time only): a parameter that backward() gives a gradient to, which no optimizer holds."""

from __future__ import annotations

import itertools
import sys
import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, frame_locals, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

SAMPLED, EVERY = 3, 32  # backward graphs walked: the first 3 once an optimizer exists, then every 32nd
MIN_STEPS = 3  # optimizer steps seen after the parameter got its gradient before it may be reported
MAX_NODES = 200_000  # a larger graph is not walked
FRAMES = 8  # frames of yours looked at for the model, from the backward() call outwards
CHAIN = 4  # single-input operations between a parameter and the operation that uses it (a transpose, a cast)
SAMPLE = 64  # elements of a parameter compared to tell whether anything changed it


@record
class _Missing:
    param: Any  # weakref
    name: str  # its name in the model
    model: int  # id of the model
    values: Any  # the first SAMPLE elements when its gradient was first seen
    pointer: int  # its data_ptr() then
    steps: int  # the watch's step count then
    dropped: bool = False  # something updated it, an optimizer took it, or it was frozen


@record
class _Model:
    name: str  # its class
    held: int  # elements of its parameters that optimizers held when it was seen
    optimizer: Any  # weakref to the optimizer holding most of them
    site: Site | None  # that optimizer's construction


class ParameterMissingFromOptimizer(Check):
    """
    Observed: the graph of the first three ``backward()`` calls after an optimizer was built, and of
    every 32nd after, walked from the loss: the parameters (``nn.Parameter``) that receive a gradient
    there and that no optimizer holds; for each, whether the gradient reaching the optimizers'
    parameters flows through the operation that uses it (it sits between them and the loss: a head, a
    middle block); the model it belongs to (a module among the locals of your frames, or their objects'
    attributes, that holds it and parameters of an optimizer), and its values. Reported when the program
    ends, at the construction of the optimizer holding most of that model's parameters, when the
    parameters left out hold fewer elements than those it trains, at least three optimizer steps ran
    since, and they were never changed (the first elements and the storage compared after each step),
    frozen, or added to an optimizer (a later one included). Never reported: parameters another
    optimizer steps (a GAN's two), frozen parameters (``requires_grad=False``: no gradient), parameters
    updated by hand (``p.data -= lr * p.grad``), an EMA copy (no gradient), a pretrained backbone left
    out of the optimizer below a trained head (the gradient to what is trained does not flow through
    it), a small part trained on top of a large fixed model (prompt tuning, an adversarial input), and
    parameters outside any such model (a module in a plain list: TRN401).
    """

    CODE = "TRN901"
    NAME = "parameter-missing-from-optimizer"
    SEVERITY = "error"
    SUMMARY = ("A parameter receives gradients but no optimizer holds it: it never trains while the layers "
               "around it do")
    DOC = """\
## What it does
Watches the parameters that `backward()` gives a gradient to and the optimizers that step: a
parameter of the model that receives a gradient, sits between the trained parameters and the loss,
and that no optimizer holds (nor anything else updates) is reported at the optimizer's construction.

## Why is this bad?
An optimizer updates only the parameters it was given. A layer left out (a head added to the model
after the optimizer was built, an optimizer built from `model.encoder.parameters()` only) keeps its
random initialisation for the whole run while the layers below it learn to feed it: the loss still
goes down a little, the model is much worse than it should be, and nothing fails.

## Example
```python
model = EncoderHead()
optimizer = torch.optim.SGD(model.encoder.parameters(), lr=0.1)
for x, y in loader:
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()  # model.head gets gradients, never an update
    optimizer.step()
```

Use instead:
```python
model = EncoderHead()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```
A part kept fixed on purpose is frozen with `model.head.requires_grad_(False)`: no gradient is
computed for it, and nothing is reported.
"""

    def __init__(self) -> None:
        super().__init__()
        self._held: dict[int, Any] = {}  # id(param) -> weakref: the parameters any optimizer held
        self._groups: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._sites: weakref.WeakKeyDictionary[Any, Site | None] = weakref.WeakKeyDictionary()
        self._missing: dict[int, _Missing] = {}  # by id(param)
        self._models: dict[int, _Model] = {}
        self._sampled = 0

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._sites[optimizer] = self.construction_site(optimizer)
        self._hold(optimizer)

    def _hold(self, optimizer: Any) -> None:
        if self._groups.get(optimizer) == len(optimizer.param_groups):
            return
        self._groups[optimizer] = len(optimizer.param_groups)  # add_param_group() adds some
        for p in optimizer_params(optimizer):
            self._held[id(p)] = weakref.ref(p)
            missing = self._missing.get(id(p))
            if missing is not None and missing.param() is p:
                missing.dropped = True

    def _holds(self, p: Any) -> bool:
        ref = self._held.get(id(p))
        return ref is not None and ref() is p

    def on_backward_pre(self, tensors: Any, retain_graph: Any, create_graph: Any) -> None:
        if not self._held:
            return
        self._sampled += 1
        if self._sampled > SAMPLED and self._sampled % EVERY:
            return
        import torch

        roots = [t.grad_fn for t in ([tensors] if isinstance(tensors, torch.Tensor) else tensors)
                 if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        nodes = _walk(roots)
        if nodes is None:
            return
        found = [n.variable for n in nodes.values() if type(n).__name__ == "AccumulateGrad"]
        found = [p for p in found if isinstance(p, torch.nn.Parameter) and not self._holds(p)
                 and id(p) not in self._missing]
        if not found:
            return
        downstream = self._downstream(nodes, {id(p) for p in found})
        found = [p for p in found if id(p) in downstream]
        if found:
            self._name(found)

    def _downstream(self, nodes: dict, candidates: set[int]) -> set[int]:
        """The ids of the ``candidates`` used by an operation whose other inputs lead to a parameter an
        optimizer holds: the gradient to those flows through the candidate's operation."""
        reach: dict[int, bool] = {}  # node id -> reaches a held parameter's accumulator
        for key, node in nodes.items():
            if key in reach:
                continue
            stack = [(node, False)]
            while stack:
                n, done = stack.pop()
                k = id(n)
                if done:
                    reach[k] = any(reach.get(id(c), False) for c in _children(n)) or \
                        (type(n).__name__ == "AccumulateGrad" and self._holds(n.variable))
                    continue
                if k in reach:
                    continue
                stack.append((n, True))
                stack.extend((c, False) for c in _children(n) if id(c) not in reach)
        out: set[int] = set()
        for node in nodes.values():
            children = _children(node)
            if len(children) < 2:
                continue
            leaves = [_leaf(c) for c in children]
            users = [id(p) for p in leaves if p is not None and id(p) in candidates]
            if users and any(reach.get(id(c), False) for c, leaf in zip(children, leaves) if leaf is None):
                out.update(users)
        return out

    def _name(self, params: list) -> None:
        """Find the model each parameter belongs to among your frames' locals, and remember it."""
        import torch

        from pytest_torchcheck.watch.sites import USER

        kind = self.events.sites.kind
        modules: dict[int, Any] = {}
        frame, seen = sys._getframe(1), 0
        while frame is not None and seen < FRAMES:
            if kind(frame.f_code.co_filename) == USER:
                seen += 1
                for value in list(frame_locals(frame).values()):
                    if isinstance(value, torch.nn.Module):
                        modules[id(value)] = value
                    elif _plain_object(value):  # a trainer of yours holding the model
                        for item in list(itertools.islice(vars(value).values(), 64)):
                            if isinstance(item, torch.nn.Module):
                                modules[id(item)] = item
            frame = frame.f_back
        # the largest model holding trained parameters: the one whose names the user knows
        ranked = sorted(modules.values(), key=lambda m: -sum(1 for _ in m.parameters()))
        for model in ranked:
            names = {id(p): name for name, p in model.named_parameters()}
            mine = [p for p in params if id(p) in names]
            if not mine:
                continue
            held = [p for p in model.parameters() if self._holds(p)]
            if not held:
                continue
            if id(model) not in self._models:
                self._models[id(model)] = self._model(model, held)
            for p in mine:
                flat = p.detach().reshape(-1)[:SAMPLE].clone()
                self._missing[id(p)] = _Missing(weakref.ref(p), names[id(p)], id(model), flat, p.data_ptr(),
                                                self.events.steps)
            params = [p for p in params if id(p) not in names]
            if not params:
                return

    def _model(self, model: Any, held: list) -> _Model:
        ids = {id(p) for p in held}
        counts = {opt: sum(1 for p in optimizer_params(opt) if id(p) in ids) for opt in list(self._sites.keys())}
        best = max(counts, key=counts.get) if counts else None
        return _Model(type(model).__name__, sum(p.numel() for p in held),
                      weakref.ref(best) if best is not None else None,
                      self._sites.get(best) if best is not None else None)

    def on_step_post(self, optimizer: Any) -> None:
        self._hold(optimizer)
        for missing in self._missing.values():
            if not missing.dropped:
                self._check(missing)

    def _check(self, missing: _Missing) -> None:
        """Drop a parameter that something changed or froze since its gradient was seen."""
        import torch

        p = missing.param()
        if p is None:
            return  # gone with its model: judged on what was seen while it lived
        with torch.no_grad():
            same = p.data_ptr() == missing.pointer and torch.equal(p.detach().reshape(-1)[:SAMPLE], missing.values)
        if not same or not p.requires_grad or self._holds(p):
            missing.dropped = True

    def finish(self) -> None:
        by_model: dict[int, list[_Missing]] = {}
        for missing in self._missing.values():
            if not missing.dropped:
                self._check(missing)
            if not missing.dropped and self.events.steps - missing.steps >= MIN_STEPS:
                by_model.setdefault(missing.model, []).append(missing)
        for key, group in by_model.items():
            model = self._models[key]
            size = sum(m.values.numel() if m.param() is None else m.param().numel() for m in group)
            if size >= model.held:
                continue  # a small part trained on a large fixed one: deliberate
            names = ", ".join(m.name for m in group[:6]) + (", ..." if len(group) > 6 else "")
            steps = self.events.steps - min(m.steps for m in group)
            self.report(model.site,
                        f"{plural(len(group), 'parameter')} of {model.name} ({names}) received gradients, but no "
                        f"optimizer holds them and nothing changed them in {plural(steps, 'optimizer step')}, while "
                        f"the optimizer built here trained {model.held:,} elements of the model through them: "
                        "they stay at their initial values; pass them to the optimizer (model.parameters()), "
                        "or freeze them with requires_grad_(False)")
        self._missing = {}


def _plain_object(value: Any) -> bool:
    """An instance whose attributes may hold the model: not a class, a module object or torch's."""
    import types

    module = str(getattr(type(value), "__module__", None))
    return (isinstance(getattr(value, "__dict__", None), dict) and not isinstance(value, (type, types.ModuleType))
            and module != "builtins" and not module.startswith("torch"))


def _children(node: Any) -> list:
    return [n for n, _ in node.next_functions if n is not None]


def _leaf(node: Any) -> Any:
    """The parameter at the end of a chain of single-input operations from ``node``, or None."""
    for _ in range(CHAIN + 1):
        if type(node).__name__ == "AccumulateGrad":
            return node.variable
        children = _children(node)
        if len(children) != 1:
            return None
        node = children[0]
    return None


def _walk(roots: list) -> dict | None:
    """The operations reachable from ``roots``, by id (held, so that the ids stay theirs); None when the
    graph is larger than MAX_NODES."""
    seen: dict[int, Any] = {}
    todo = list(roots)
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if len(seen) > MAX_NODES:
            return None
        todo.extend(_children(node))
    return seen
