"""TRN402 at run time: a plain tensor attribute of a module, used by its forward, left untrained or left behind
by a move or cast."""

from __future__ import annotations

import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, optimizer_params, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

VERDICT = 3  # optimizer steps after a trainable attribute's first use before it is judged
COPIED = 1 << 20  # elements: a larger trainable attribute is not copied, and never reported
_MOVES = ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type")


@record
class _Leaf:
    module: Any  # weakref to the module
    owner: str  # its class
    name: str  # self.<name>
    tensor: Any  # weakref to the tensor
    value: Any  # a copy of its value when first seen: a manual step (in place, or through .data) changes it
    site: Site | None  # the attribute's assignment, else the call of the module
    steps: int  # the watch's step count when first seen


@record
class _Cast:
    module: Any  # weakref to the module
    reference: tuple  # (device, dtype) of the module's first floating parameter or buffer, before the call
    attributes: dict  # name -> (tensor weakref, device, dtype) before the call
    site: Site | None  # the user's call of .to()/.half()/...


def _uses(module: Any) -> frozenset[str]:
    """The attribute names the module's ``forward`` reads (its code's names, nested functions included)."""
    cls = type(module)
    names = _NAMES.get(cls)
    if names is None:
        found: set[str] = set()
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        stack = [code] if code is not None else []
        while stack:
            c = stack.pop()
            found.update(c.co_names)
            stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        names = _NAMES[cls] = frozenset(found)
    return names


_NAMES: dict[type, frozenset[str]] = {}


def _plain_tensors(module: Any) -> list[tuple[str, Any]]:
    """The tensors held in the module's ``__dict__`` (not its parameters nor buffers) that forward reads."""
    import torch

    own = vars(module)
    if not any(isinstance(v, torch.Tensor) for v in own.values()):
        return []
    uses = _uses(module)
    return [(n, v) for n, v in own.items() if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter)
            and n in uses]


def _reference(module: Any) -> tuple | None:
    for t in module.parameters():
        if t.is_floating_point():
            return t.device, t.dtype
    for t in module.buffers():
        if t.is_floating_point():
            return t.device, t.dtype
    return None


def _same(t: Any, value: Any) -> bool:
    import torch

    with torch.no_grad():
        return t.shape == value.shape and t.dtype == value.dtype and t.device == value.device and \
            bool(torch.equal(t.detach(), value))


def _shown(device: Any, dtype: Any) -> str:
    return f"{device}/{str(dtype).replace('torch.', '')}"


class TensorAttributeNotRegistered(Check):
    """
    Observed: each module's first call, and the tensors in its ``__dict__`` (plain attributes: not its
    parameters nor buffers) whose names its ``forward`` reads; the optimizers and the parameters they
    hold; and the calls of ``.to()``, ``.cuda()``, ``.cpu()``, ``.half()``, ``.float()``, ``.double()``,
    ``.bfloat16()`` and ``.type()`` on modules. Reported, at the attribute's assignment in the module's
    class (``self.scale = torch.ones(...)``) when there is one such statement, else at the module's
    call: (a) a plain attribute that requires grad, got a gradient and, a few optimizer steps later,
    still has the value it had at its first use while no optimizer holds it (it is trained by nothing);
    (b) a move or cast that changed the device or dtype of the module's parameters, after which the
    module's next forward ran with the attribute still on the old device or in the old dtype (the same
    tensor, or one a method remade there in between: ``self.eps = torch.randn(n)`` in a ``reset()``
    called after the move). Never reported: buffers and parameters, a constant kept as a plain attribute
    that no move or cast concerned, an attribute that the module moves itself (a ``_apply``/``to``
    override) or remakes on its parameters' device and dtype, a non-floating attribute on a dtype cast
    (an index or a mask), tensors created inside ``forward``, a trainable attribute that an optimizer
    holds or whose value the program changes itself (a manual step, through ``.data`` too), one over a
    million elements (not copied), and modules whose ``forward`` never ran after the cast.
    """

    CODE = "TRN402"
    NAME = "tensor-attribute-not-registered"
    SEVERITY = "warning"
    SEES_COMPILED = False  # it watches module calls, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[int, Any] = {}  # id(module) -> weakref: looked at already
        self._leaves: list[_Leaf] = []
        self._held: dict[int, Any] = {}  # id(param) -> weakref, every optimizer's
        self._casts: dict[int, _Cast] = {}  # id(module) -> a cast waiting for the module's next forward
        self._moving = 0  # moves in progress (a move's override calls super's)

    def install(self, events: Any) -> None:
        super().install(events)
        for method in _MOVES:
            events.intercept(f"torch.nn.Module.{method}", pre=self._move_pre, post=self._move_post, direct=True)

    # -- (a): trainable attributes no optimizer holds

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._hold(optimizer)

    def _hold(self, optimizer: Any) -> None:
        self._held.update((id(p), weakref.ref(p)) for p in optimizer_params(optimizer))

    def on_step_post(self, optimizer: Any) -> None:
        if self._leaves:
            self._hold(optimizer)  # add_param_group()
            due = [leaf for leaf in self._leaves if self.events.steps - leaf.steps >= VERDICT]
            if due:
                self._leaves = [leaf for leaf in self._leaves if leaf not in due]
                for leaf in due:
                    self._judge(leaf)

    def finish(self) -> None:
        for leaf in self._leaves:
            if self.events.steps > leaf.steps:
                self._judge(leaf)
        self._leaves = []
        self._casts = {}

    def _judge(self, leaf: _Leaf) -> None:
        module, tensor = leaf.module(), leaf.tensor()
        if module is None or tensor is None or vars(module).get(leaf.name) is not tensor:
            return  # gone, or rebound by the program (updated out of place)
        ref = self._held.get(id(tensor))
        if ref is not None and ref() is tensor:
            return
        if not tensor.requires_grad or tensor.grad is None or not _same(tensor, leaf.value):
            return  # no gradient reached it, or the program updates it itself
        self.report(leaf.site,
                    f"`self.{leaf.name}` of {leaf.owner} is a plain tensor attribute ({tuple(tensor.shape)}, "
                    f"requires_grad=True) that {leaf.owner}.forward() reads: it got a gradient, but no "
                    f"optimizer holds it and it kept its initial value over "
                    f"{plural(self.events.steps - leaf.steps, 'optimizer step')}; make it an nn.Parameter")

    def on_forward_pre(self, module: Any, args: Any) -> None:
        if self._casts:
            cast = self._casts.pop(id(module), None)
            if cast is not None and cast.module() is module:
                self._after_cast(module, cast)
        key = id(module)
        ref = self._seen.get(key)
        if ref is not None and ref() is module:
            return
        self._seen[key] = weakref.ref(module)
        for name, t in _plain_tensors(module):
            if t.requires_grad and t.is_leaf and t.numel() <= COPIED:
                self._leaves.append(_Leaf(weakref.ref(module), type(module).__name__, name, weakref.ref(t),
                                          t.detach().clone(), self._where(module, name), self.events.steps))

    def _where(self, module: Any, name: str) -> Site | None:
        from pytest_torchcheck.watch.checks._common import attribute_assignment

        return attribute_assignment(type(module), name) or self.site()

    # -- (b): attributes a move or cast left behind

    def _move_pre(self, args: tuple, kwargs: dict) -> None:
        self._moving += 1
        if self._moving > 1 or not args:
            return
        import torch

        root = args[0]
        if not isinstance(root, torch.nn.Module):
            return
        site = None
        for module in root.modules():
            attributes = _plain_tensors(module)
            if not attributes:
                continue
            reference = _reference(module)
            if reference is None:
                continue
            site = site or self.site()
            self._casts[id(module)] = _Cast(weakref.ref(module), reference,
                                            {n: (weakref.ref(t), t.device, t.dtype) for n, t in attributes}, site)

    def _move_post(self, args: tuple, kwargs: dict, result: Any) -> None:
        self._moving = max(0, self._moving - 1)

    def _after_cast(self, module: Any, cast: _Cast) -> None:
        now = _reference(module)
        if now is None or now == cast.reference:
            return  # the call changed nothing of the module's own
        device, dtype = cast.reference
        import torch

        for name, (ref, was_device, was_dtype) in cast.attributes.items():
            # Rebound since (an override, or a method the program calls between the move and the forward):
            # where the new tensor is, is what counts. Carried along, it is where the parameters went;
            # remade by code that never asks the module (`torch.randn(n)`), it is where they were.
            t = vars(module).get(name)
            if not isinstance(t, torch.Tensor):
                continue
            moved = now[0] != device and t.device == was_device and was_device != now[0]
            cast_ = now[1] != dtype and t.is_floating_point() and t.dtype == was_dtype and was_dtype == dtype
            if moved or cast_:
                owner = type(module).__name__
                advice = "make it an nn.Parameter" if t.requires_grad else "register it with register_buffer()"
                self.report(self._assignment_or(module, name, cast.site),
                            f"`self.{name}` of {owner} is a plain tensor attribute that {owner}.forward() "
                            f"reads: a move/cast took the module's parameters from {_shown(device, dtype)} to "
                            f"{_shown(*now)}, and the next forward ran with it still on "
                            f"{_shown(t.device, t.dtype)}; {advice}")

    def _assignment_or(self, module: Any, name: str, site: Site | None) -> Site | None:
        from pytest_torchcheck.watch.checks._common import attribute_assignment

        return attribute_assignment(type(module), name) or site
