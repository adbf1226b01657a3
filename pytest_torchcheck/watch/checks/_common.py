"""What several runtime checks share: sampling of value checks, the tensors a loss was given, the user's
frame of a call, top-level forwards, whether a graph was ever backpropagated, which models an optimizer
trains, and which layers behave differently in training and in evaluation.

Not a check itself (its name does not match ``trnNNN_*.py``, so the watcher never loads it as one).
"""

from __future__ import annotations

import sys
import weakref

from pytest_torchcheck.watch.check import Check, optimizer_params

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, Callable

    from pytest_torchcheck.watch.sites import Site, Sites


class Sampler:
    """Which calls of a value check run: the first ``first`` ones, then one in ``every``. A value check costs a
    reduction and a host sync; a bug that shows in its values shows on most calls, so checking a sample
    finds it a few calls later while a correct program pays for a few calls only."""

    def __init__(self, first: int = 8, every: int = 32) -> None:
        self.first, self.every, self.calls = first, every, 0

    def due(self) -> bool:
        self.calls += 1
        return self.calls <= self.first or self.calls % self.every == 0


def loss_input(args: tuple, kwargs: dict, sampler: Sampler) -> tuple[Any, bool] | None:
    """The floating-point input of a loss call (its first argument, ``input``) when this call is one to
    check, and whether ``softmax()`` produced it: every call whose input softmax made, a sample of the
    others (TRN501, TRN504)."""
    x = argument(args, kwargs, 0, "input")
    if not floating(x):
        return None
    softmax = made_by(x) == "SoftmaxBackward0"
    if not softmax and not sampler.due():
        return None
    return x, softmax


def argument(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    """The argument a call passed at position ``index`` or as keyword ``name``."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def passed(args: tuple, kwargs: dict, index: int, name: str) -> bool:
    """Whether a call passed the parameter at ``index`` / ``name`` itself, rather than leaving its default."""
    return len(args) > index or name in kwargs


def made_by(t: Any) -> str | None:
    """The autograd node's name of the operation that produced ``t`` (``SoftmaxBackward0``), if recorded."""
    fn = getattr(t, "grad_fn", None)
    return type(fn).__name__ if fn is not None else None


def floating(t: Any) -> bool:
    import torch

    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.layout == torch.strided \
        and t.device.type != "meta" and t.numel() > 0


def class_dim(t: Any) -> int:
    """The class dimension of a classification loss's input: 1 for a batch, 0 for one unbatched sample."""
    return 1 if t.dim() >= 2 else 0


def user_frame(sites: Sites, depth: int = 1, frame: FrameType | None = None) -> FrameType | None:
    """The innermost frame outside torch, torchcheck and the standard library (from ``frame`` outwards)."""
    from pytest_torchcheck.watch.sites import LIBRARY

    frame = sys._getframe(depth) if frame is None else frame
    while frame is not None and sites.kind(frame.f_code.co_filename) == LIBRARY:
        frame = frame.f_back
    return frame


_MODULE_CALL = ("torch/nn/modules/module.py", "torch\\nn\\modules\\module.py")


def module_caller(sites: Sites) -> FrameType | None:
    """The frame that called the module whose forward hook runs now: the first frame outside torch's module
    call machinery and torchcheck (it may be torch's own code, ``swa_utils.update_bn``)."""
    import os

    import pytest_torchcheck

    own = os.path.dirname(os.path.abspath(pytest_torchcheck.__file__))
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.endswith(_MODULE_CALL) and not name.startswith(own):
            return frame
        frame = frame.f_back
    return None


_NEXT_OP: dict[Any, dict[int, str]] = {}


def result_discarded(frame: FrameType | None) -> bool:
    """Whether the call the frame is running is a statement whose value is thrown away (``model(x)`` alone
    on its line): read from the bytecode, the instruction after the call pops its result."""
    if frame is None:
        return False
    code = frame.f_code
    table = _NEXT_OP.get(code)
    if table is None:
        import dis

        ops = list(dis.get_instructions(code))
        table = _NEXT_OP[code] = {a.offset: b.opname for a, b in zip(ops, ops[1:])}
    return table.get(frame.f_lasti) == "POP_TOP"


def in_backward() -> bool:
    """Whether autograd's engine is running a backward on this thread (a checkpointed forward recomputed)."""
    import torch

    task = getattr(torch._C, "_current_graph_task_id", None)
    return task is not None and task() != -1


def tensors_of(output: Any) -> list[Any]:
    from pytest_torchcheck.anomaly import iter_tensors

    return [t for _, t in iter_tensors(output)]


class Probe:
    """Whether autograd ever ran the nodes that produced a forward's outputs (a backward or ``autograd.grad``
    went through them), learnt when their graph is freed: ``done(probe)`` is called then, with ``traversed``
    set. Holds no tensor and no node: the graph is freed when the program lets it go."""

    __slots__ = ("traversed", "data", "__weakref__")

    def __init__(self, data: Any = None) -> None:
        self.traversed = False
        self.data = data


def probe_graph(output: Any, data: Any, done: Callable[[Probe], None] | None = None,
                traversed: Callable[[Probe], None] | None = None) -> Probe | None:
    """Watch the graph of ``output``'s tensors (see :class:`Probe`); None when none of them has a graph.
    ``traversed(probe)``: called the first time autograd runs one of them."""
    nodes = {id(t.grad_fn): t.grad_fn for t in tensors_of(output) if t.grad_fn is not None}
    if not nodes:
        return None
    probe = Probe(data)

    def hook(grad_outputs: Any) -> None:
        if not probe.traversed:
            probe.traversed = True
            if traversed is not None:
                traversed(probe)

    for node in nodes.values():
        node.register_prehook(hook)
    if done is not None:
        # the nodes hold the only references to ``hook``: it dies with the last of them
        weakref.finalize(hook, done, probe).atexit = False
    return probe


class TopLevel(Check):
    """A check that watches top-level forwards only: ``model(x)`` called from outside any other module's
    forward, not its submodules' calls, nor a checkpointed forward recomputed during a backward. Subclasses
    define ``on_top_pre(module, args)`` and ``on_top_post(module, args, output)``.

    The depth is counted by the forward hooks; a forward that raised never reaches its post hook, so after
    one that the program caught every later forward counts as nested and the check stays silent."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._top: Any = None  # the module of the running top-level forward, until its post hook

    def on_forward_pre(self, module: Any, args: Any) -> None:
        self._depth += 1
        if self._depth == 1 and not in_backward():
            self._top = module
            self.on_top_pre(module, args)

    def on_forward_post(self, module: Any, args: Any, output: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self._top is module:
            self._top = None
            self.on_top_post(module, args, output)

    def on_top_pre(self, module: Any, args: Any) -> None:
        pass

    def on_top_post(self, module: Any, args: Any, output: Any) -> None:
        pass


class Trained:
    """Which models an optimizer steps: the ids of every parameter of each optimizer that stepped (taken
    at its first step; parameter groups added later are not seen)."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self._seen: weakref.WeakSet[Any] = weakref.WeakSet()
        self._known: weakref.WeakSet[Any] = weakref.WeakSet()  # modules found trained

    def stepped(self, optimizer: Any) -> None:
        if optimizer not in self._seen:
            self._seen.add(optimizer)
            self.ids.update(id(p) for p in optimizer_params(optimizer))

    def trained(self, module: Any) -> bool:
        if module in self._known:
            return True
        if any(id(p) in self.ids for p in module.parameters()):
            self._known.add(module)
            return True
        return False

    def steps_module(self, optimizer: Any, module: Any) -> bool:
        """Whether ``optimizer`` holds a parameter of ``module``."""
        ids = {id(p) for p in optimizer_params(optimizer)}
        return any(id(p) in ids for p in module.parameters())


_LAYERS: weakref.WeakKeyDictionary[Any, list] = weakref.WeakKeyDictionary()


def mode_layers(module: Any) -> list[Any]:
    """The submodules (``module`` included) whose forward depends on the training mode: dropout with
    ``p > 0``, batch norm and instance norm that track running statistics. Cached per module."""
    layers = _LAYERS.get(module)
    if layers is None:
        from torch.nn.modules.batchnorm import _BatchNorm
        from torch.nn.modules.dropout import _DropoutNd
        from torch.nn.modules.instancenorm import _InstanceNorm

        layers = []
        for m in module.modules():
            if isinstance(m, _DropoutNd):
                if m.p > 0:
                    layers.append(m)
            elif isinstance(m, (_BatchNorm, _InstanceNorm)) and m.track_running_stats:
                layers.append(m)
        _LAYERS[module] = layers
    return layers


def describe_layers(layers: list[Any]) -> str:
    """``1 Dropout, 2 BatchNorm1d``."""
    counts: dict[str, int] = {}
    for m in layers:
        counts[type(m).__name__] = counts.get(type(m).__name__, 0) + 1
    return ", ".join(f"{n} {name}" for name, n in counts.items())


def attribute_assignment(cls: type, attribute: str) -> Site | None:
    """The only statement ``self.<name> = ...`` in ``cls`` or a base class of the user's, if there is one."""
    import ast
    import inspect
    import os
    import textwrap

    from pytest_torchcheck.watch.sites import Site  # noqa: F811  (at run time, not only for typing)

    name = attribute.split(":", 1)[0]
    found = []
    for klass in cls.__mro__:
        if klass.__module__.startswith(("torch.", "builtins")):
            continue
        try:
            lines, start = inspect.getsourcelines(klass)
            path = os.path.abspath(inspect.getsourcefile(klass) or "")
        except (OSError, TypeError):
            continue
        try:
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except SyntaxError:
            continue
        indent = len(lines[0]) - len(lines[0].lstrip())
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == name and \
                        isinstance(target.value, ast.Name) and target.value.id == "self":
                    found.append(Site(path, start + node.lineno - 1, node.col_offset + indent + 1,
                                      start + node.end_lineno - 1, node.end_col_offset + indent + 1))
    return found[0] if len(found) == 1 else None


class SampledLossCheck(Check):
    """A check of the input a loss function is given (TRN501, TRN504): ``LOSS`` is the function's dotted
    name; :meth:`judge` sees every call whose input ``softmax()`` made and a sample of the others."""

    LOSS = ""

    def __init__(self) -> None:
        super().__init__()
        self._sample = Sampler()

    def install(self, events: Any) -> None:
        super().install(events)
        events.intercept(self.LOSS, pre=self._loss)

    def _loss(self, args: tuple, kwargs: dict) -> None:
        checked = loss_input(args, kwargs, self._sample)
        if checked is not None:
            self.judge(checked[0], checked[1], args, kwargs)

    def judge(self, x: Any, softmax: bool, args: tuple, kwargs: dict) -> None:
        raise NotImplementedError
