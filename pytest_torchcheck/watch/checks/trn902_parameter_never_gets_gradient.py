"""TRN902 (run time only): ``detach()`` cut parameters an optimizer trains from every backward of the run."""

from __future__ import annotations

import sys
import weakref

from lint_rules.records import factory, record
from pytest_torchcheck.watch.check import Check, frame_locals, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

MIN_STEPS = 3  # steps of the optimizer, all without a gradient for the parameter, before it may be reported
DEPTH, NODES = 6, 64  # how far below a detached tensor its parameters are looked for


@record
class _Optimizer:
    never: dict = factory(dict)  # id(param) -> weakref: parameters without a gradient at every step so far
    steps: int = 0  # steps since its first
    others: bool = False  # some of its parameters had a gradient at a step
    started: bool = False


@record
class _Cut:
    param: Any  # weakref
    name: str
    site: Site | None  # the detach() call


class ParameterNeverGetsGradient(Check):
    """
    Observed: at each optimizer step, which of its parameters have no gradient (only those that had none
    at every earlier step are followed, so the cost shrinks to nothing after the first step); and each
    ``detach()`` your code calls, in a method of your module, on a tensor computed a few operations up
    from such a parameter of that module (a branch's output detached in ``forward``). Reported when the
    program ends, at the ``detach()``, for parameters that require grad and had no gradient at any of at
    least three steps of the optimizer holding them, while its other parameters had gradients. Never
    reported: a module that is never called, or whose output is unused (a pooler whose result a task
    ignores: common, and harmless), a branch taken only in some steps (it gets a gradient then),
    parameters frozen with ``requires_grad_(False)``, and a pretrained part kept fixed by detaching its
    output: parameters set by ``load_state_dict``, a model read whole with ``torch.load``, or a part built
    from an installed package's class (a transformers or timm backbone).
    """

    CODE = "TRN902"
    NAME = "parameter-never-gets-gradient"
    SEVERITY = "warning"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph
    SUMMARY = ("A detach() cuts parameters that an optimizer holds from every backward: they never receive a "
               "gradient and never train")
    DOC = """\
## What it does
Watches which parameters of each optimizer receive a gradient at each step, and the `detach()` calls
of your code: a `detach()` on the output of a module whose parameters then never get a gradient in
the whole run, while the optimizer's other parameters do, is reported at the `detach()`.

## Why is this bad?
`detach()` cuts the graph: no gradient flows back through it. Applied to a branch's output in
`forward`, it silently stops that branch from learning: its parameters stay at their random
initialisation, the optimizer skips them (their gradient is `None`), and the model trains, only worse.

## Example
```python
def forward(self, x):
    return self.deep(x) + self.shortcut(x).detach()
```

Use instead:
```python
def forward(self, x):
    return self.deep(x) + self.shortcut(x)
```
A branch kept fixed on purpose is frozen with `self.shortcut.requires_grad_(False)`: nothing is
reported for it.
"""

    def __init__(self) -> None:
        super().__init__()
        self._optimizers: weakref.WeakKeyDictionary[Any, _Optimizer] = weakref.WeakKeyDictionary()
        self._never: dict[int, _Optimizer] = {}  # id(param) -> the optimizer state following it
        self._cut: dict[int, _Cut] = {}  # id(param) -> where a detach() cut it
        self._loaded: dict[int, Any] = {}  # id(param) -> weakref: parameters a checkpoint set

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept("torch.Tensor.detach", pre=self._detaching, direct=True)
        events.intercept("torch.nn.Module._load_from_state_dict", pre=self._loading)
        events.intercept("torch.load", post=self._loaded_whole)

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._optimizers[optimizer] = _Optimizer()

    def on_step_pre(self, optimizer: Any) -> None:
        state = self._optimizers.get(optimizer)
        if state is None:
            return
        if not state.started:
            state.started = True
            for p in optimizer_params(optimizer):
                if p.grad is None and p.requires_grad:
                    state.never[id(p)] = weakref.ref(p)
                    self._never[id(p)] = state
                else:
                    state.others = state.others or p.grad is not None
        else:
            for key, ref in list(state.never.items()):
                p = ref()
                if p is None or p.grad is not None or not p.requires_grad:
                    del state.never[key]
                    self._never.pop(key, None)
                    state.others = state.others or (p is not None and p.grad is not None)
        state.steps += 1

    def _loading(self, args: Any, kwargs: Any) -> None:
        module = args[0]
        for p in module._parameters.values():
            if p is not None:
                self._loaded[id(p)] = weakref.ref(p)

    def _loaded_whole(self, args: Any, kwargs: Any, result: Any) -> None:
        import torch

        if isinstance(result, torch.nn.Module):  # a pickled model: its values come from a file
            for p in result.parameters():
                self._loaded[id(p)] = weakref.ref(p)

    def _detaching(self, args: Any, kwargs: Any) -> None:
        if not self._never:
            return
        fn = getattr(args[0], "grad_fn", None)
        if fn is None:
            return
        found = []
        todo, seen = [(fn, 0)], set()
        while todo and len(seen) < NODES:
            node, depth = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if type(node).__name__ == "AccumulateGrad":
                p = node.variable
                state = self._never.get(id(p))
                if state is not None and state.never[id(p)]() is p and id(p) not in self._cut \
                        and not _is(self._loaded, p):
                    found.append(p)
                continue
            if depth < DEPTH:
                todo.extend((n, depth + 1) for n, _ in node.next_functions if n is not None)
        if found:
            site, names = self.site(), self._names(found)
            for p in found:
                if id(p) in names:
                    self._cut[id(p)] = _Cut(weakref.ref(p), names[id(p)], site)

    def _names(self, params: list) -> dict[int, str]:
        """The parameters' names (``shortcut.weight``) in the module of yours whose method called detach(),
        leaving out those of a part built from an installed package's class (a pretrained transformers or
        timm backbone, detached on purpose)."""
        import torch

        from pytest_torchcheck.watch.sites import USER

        kind = self.events.sites.kind
        frame = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_argcount and kind(code.co_filename) == USER:
                owner = frame_locals(frame).get(code.co_varnames[0])
                if isinstance(owner, torch.nn.Module):
                    wanted = {id(p) for p in params}
                    names = {id(p): name for name, p in owner.named_parameters() if id(p) in wanted}
                    for key, name in list(names.items()):
                        part = owner.get_submodule(name.split(".")[0]) if "." in name else owner
                        source = getattr(sys.modules.get(type(part).__module__), "__file__", None) or ""
                        if source and not _torch_file(source) and kind(source) != USER:
                            del names[key]
                    return names
            frame = frame.f_back
        return {}

    def finish(self) -> None:
        by_site: dict[Any, list[tuple[_Cut, _Optimizer]]] = {}
        for key, cut in self._cut.items():
            state = self._never.get(key)
            p = cut.param()
            if state is None or state.never.get(key) is None or \
                    (p is not None and (p.grad is not None or not p.requires_grad)):
                continue  # it got a gradient after all, or was frozen
            if state.steps >= MIN_STEPS and state.others:
                by_site.setdefault(cut.site, []).append((cut, state))
        for site, cuts in by_site.items():
            steps = max(state.steps for _, state in cuts)
            names = ", ".join(cut.name for cut, _ in cuts[:6]) + (", ..." if len(cuts) > 6 else "")
            self.report(site,
                        f"detach() here cut {plural(len(cuts), 'parameter')} ({names}) from every backward: in "
                        f"{plural(steps, 'optimizer step')} they never received a gradient while the optimizer's "
                        "other parameters did, so they stay at their initial values; remove the detach(), or "
                        "freeze them with requires_grad_(False) if they are meant to stay fixed")
        self._cut = {}


def _is(refs: dict, obj: Any) -> bool:
    ref = refs.get(id(obj))
    return ref is not None and ref() is obj


def _torch_file(path: str) -> bool:
    import os

    import torch

    return os.path.abspath(path).startswith(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
