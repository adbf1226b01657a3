"""TRN401 at run time: a module called in a model's forward, held in a plain list/dict/tuple attribute of it."""

from __future__ import annotations

import functools
import sys
import weakref

from lint_rules.records import record
from pytest_torchcheck.watch.check import Check, frame_locals, optimizer_params, plural
from pytest_torchcheck.watch.checks._common import attribute_assignment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pytest_torchcheck.watch.sites import Site

VERDICT = 3  # steps after a module's first call before it is judged
CALLERS = 4  # frames of yours, from a module's call outwards, looked at for the model whose forward calls it


@record
class _Unregistered:
    modules: list  # weakrefs to the modules of the attribute seen called
    owner: str  # the model's class
    attribute: str  # self.<attribute> holds it
    site: Site  # where it is reported: the attribute's assignment, else the call
    steps: int  # the watch's step count at its first call


class UnregisteredModuleCalled(Check):
    """
    Observed: each module's first call (``module(...)``), through torch's forward pre-hook; the first
    frame of yours that called it whose ``self`` is another module (the model whose ``forward`` runs
    it); whether the called module is registered anywhere under that model, or under any module whose
    method is further out on the stack; and whether a ``list``, ``tuple`` or ``dict`` attribute of the
    model holds it. Reported when the program ends, for a module held that way whose parameters require
    grad, at least one of which received a gradient, while no optimizer holds any of them: it was
    trained by nothing. The finding is at the attribute's assignment in the model's class
    (``self.blocks = [...]``) when there is one such statement, else at the call. Never reported: a
    module passed to ``forward`` as an argument, modules in ``nn.ModuleList``/``nn.ModuleDict``/
    ``nn.Sequential``, a module registered elsewhere in the model (shared weights), a module stored
    outside registration on purpose (``self.__dict__["teacher"] = t``), and a frozen or ``no_grad``
    teacher kept in a list (no gradient reaches it), or one whose parameters an optimizer holds.
    """

    CODE = "TRN401"
    NAME = "unregistered-submodules"
    SEVERITY = "error"
    SEES_COMPILED = False  # it watches calls made inside forward, which a compiled region makes as one graph

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[int, Any] = {}  # id(module) -> weakref: already looked at
        self._trees: dict[int, tuple[Any, set[int]]] = {}  # id(model) -> (weakref, ids of its modules)
        self._found: dict[tuple[int, str], _Unregistered] = {}  # by (id(model), attribute)
        self._held: dict[int, Any] = {}  # id(param) -> weakref: the parameters any optimizer held
        self._groups: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def on_optimizer_created(self, optimizer: Any) -> None:
        self._hold(optimizer)

    def _hold(self, optimizer: Any) -> None:
        if self._groups.get(optimizer) != len(optimizer.param_groups):  # add_param_group() adds some
            self._groups[optimizer] = len(optimizer.param_groups)
            self._held.update((id(p), weakref.ref(p)) for p in optimizer_params(optimizer))

    def on_step_post(self, optimizer: Any) -> None:
        self._hold(optimizer)
        self._trees.clear()  # models change between steps (a head added): looked up again
        if self._found:
            # judged a few steps after its first call, while the model still exists
            for key, found in list(self._found.items()):
                if self.events.steps - found.steps >= VERDICT:
                    del self._found[key]
                    self._verdict(found)

    def on_forward_pre(self, module: Any, args: Any) -> None:
        key = id(module)
        ref = self._seen.get(key)
        if ref is not None and ref() is module:
            return
        self._seen[key] = weakref.ref(module)
        self._look(module)

    def _look(self, module: Any) -> None:
        import torch

        from pytest_torchcheck.watch.sites import LIBRARY, USER

        kind = self.events.sites.kind
        frame = sys._getframe(2)
        models: list[Any] = []  # the modules whose methods are on the stack, innermost first
        while frame is not None and len(models) < CALLERS:
            code = frame.f_code
            where = kind(code.co_filename)
            # torch's own frames (nn.Sequential.forward, _call_impl) may be classified as an installed
            # package's when torch was imported after the watch began: told apart by their folder
            if where != LIBRARY and code.co_argcount and not code.co_filename.startswith(_torch_dir()):
                owner = frame_locals(frame).get(code.co_varnames[0])
                if isinstance(owner, torch.nn.Module) and owner is not module:
                    if where != USER:
                        return  # called by an installed package's model: its own business
                    models.append(owner)
            frame = frame.f_back
        if not models:
            return
        model = models[0]
        for outer in models:
            if self._registered(outer, module):
                return
        attribute = _holding_attribute(model, module)
        if attribute is None:
            return  # passed in, or kept outside registration on purpose
        key = (id(model), attribute)
        if key in self._found:
            self._found[key].modules.append(weakref.ref(module))
        else:
            site = attribute_assignment(type(model), attribute) or self.site()  # else the call
            self._found[key] = _Unregistered([weakref.ref(module)], type(model).__name__, attribute, site,
                                             self.events.steps)

    def _registered(self, model: Any, module: Any) -> bool:
        entry = self._trees.get(id(model))
        if entry is None or entry[0]() is not model or id(module) not in entry[1]:
            entry = self._trees[id(model)] = (weakref.ref(model), {id(m) for m in model.modules()})
        return id(module) in entry[1]

    def finish(self) -> None:
        for found in self._found.values():
            self._verdict(found)
        self._found = {}
        self._trees.clear()

    def _verdict(self, found: _Unregistered) -> None:
        modules = [m for m in (ref() for ref in found.modules) if m is not None]
        params = list({id(p): p for m in modules for p in m.parameters() if p.requires_grad}.values())
        if not any(p.grad is not None for p in params) or any(_in(self._held, p) for p in params):
            return  # no gradient reached them (a frozen or no_grad teacher), or an optimizer trains them all the same
        kinds = sorted({type(m).__name__ for m in modules})
        name, container = found.attribute.split(":")
        self.report(found.site,
                    f"`self.{name}` of {found.owner} is a plain {container} holding "
                    f"{plural(len(modules), 'module')} ({', '.join(kinds)}) that {found.owner}.forward() calls: "
                    f"they are not registered, so their {plural(len(params), 'parameter')} "
                    f"({sum(p.numel() for p in params):,} elements) got gradients but no optimizer holds them, "
                    ".to() does not move them and state_dict() leaves them out; hold them in nn.ModuleList or "
                    "nn.ModuleDict")


@functools.lru_cache(maxsize=None)
def _torch_dir() -> str:
    import os

    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _in(refs: dict, obj: Any) -> bool:
    """Whether ``obj`` is in an id -> weakref table (tensors compare by value: no sets of them)."""
    ref = refs.get(id(obj))
    return ref is not None and ref() is obj


def _holding_attribute(model: Any, module: Any) -> str | None:
    """``name:list`` of the model's attribute that is a list/tuple/dict holding ``module`` (one level of
    nesting looked into), or None."""
    for name, value in vars(model).items():
        if name.startswith("__") or not isinstance(value, (list, tuple, dict)):
            continue
        items = list(value.values()) if isinstance(value, dict) else list(value)
        for item in items:
            inner = list(item.values()) if isinstance(item, dict) else \
                item if isinstance(item, (list, tuple)) else [item]
            if any(x is module for x in inner):
                return f"{name}:{type(value).__name__}"
    return None


