"""TRN403 at run time: ``module.forward(x)`` called directly on a module that has forward hooks, which the call
skips."""

from __future__ import annotations

import sys

from pytest_torchcheck.watch.check import Check, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def _hooks(module: Any) -> list[Any]:
    """The module's own forward hooks and pre-hooks, but those torchcheck registered."""
    found = []
    for name in ("_forward_pre_hooks", "_forward_hooks"):
        for hook in (getattr(module, name, None) or {}).values():
            if not str(getattr(hook, "__module__", "") or "").startswith("pytest_torchcheck"):
                found.append(hook)
    return found


def _named(hook: Any) -> str:
    name = getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or type(hook).__name__
    return f"`{name}`"


class ForwardCalledDirectly(Check):
    """
    Observed: the modules running through their own call (``module(x)``, torch's global forward hooks),
    and the ``forward`` of every class one of whose modules has a forward hook or pre-hook (registered
    before its first call, or later with ``register_forward_hook``/``register_forward_pre_hook``):
    wrapped, so that a ``forward`` that runs while its module is not inside its own call is seen.
    Reported at your ``.forward(`` line: a direct call of ``forward`` on a module that has forward hooks
    or pre-hooks of its own (the program's or a library's, FSDP2's ``fully_shard`` included), which the
    call skips. Never reported: ``super().forward(x)`` inside a subclass's ``forward`` (its module is
    inside its call), ``.forward()`` on a module without hooks (nothing is skipped), a library's own
    direct calls, hooks torchcheck itself registered, and ``DistributedDataParallel.forward`` called
    directly (its gradient synchronisation runs inside ``forward``).
    """

    CODE = "TRN403"
    NAME = "forward-called-directly"
    SEVERITY = "warning"
    SEES_COMPILED = False  # a compiled model's forward is traced, not called

    def __init__(self) -> None:
        super().__init__()
        self._active: dict[int, int] = {}  # id(module) -> calls of it in progress through module(...)
        self._wrapped: set[type] = set()
        self._restore: list[Callable[[], None]] = []

    def install(self, events: Any) -> None:
        super().install(events)
        for method in ("register_forward_hook", "register_forward_pre_hook"):
            events.intercept(f"torch.nn.Module.{method}", post=self._hooked)

    def uninstall(self) -> None:
        super().uninstall()
        while self._restore:
            self._restore.pop()()
        self._wrapped.clear()

    def _hooked(self, args: tuple, kwargs: dict, result: Any) -> None:
        if args and type(args[0]) not in self._wrapped:
            self._wrap(type(args[0]))

    def on_forward_pre(self, module: Any, args: Any) -> None:
        active = self._active
        key = id(module)
        active[key] = active.get(key, 0) + 1
        cls = type(module)
        if cls not in self._wrapped and (module._forward_hooks or module._forward_pre_hooks):
            self._wrap(cls)

    def on_forward_post(self, module: Any, args: Any, output: Any) -> None:
        active = self._active
        key = id(module)
        n = active.get(key, 0)
        if n > 1:
            active[key] = n - 1
        else:
            active.pop(key, None)

    def _wrap(self, cls: type) -> None:
        import functools

        self._wrapped.add(cls)
        if cls.__module__.startswith(("torch.jit", "torch._dynamo", "torch._C")):
            return  # scripted and compiled modules: their forward is not a Python method to wrap
        original = getattr(cls, "forward", None)
        if original is None or not callable(original) or getattr(original, "__torchcheck_forward__", False):
            return
        had = "forward" in vars(cls)
        active = self._active
        check = self

        @functools.wraps(original)
        def forward(module, *args: Any, **kwargs: Any) -> Any:
            key = id(module)
            if key in active:
                return original(module, *args, **kwargs)
            # outside its own call: seen, and counted as inside one so that its super().forward() is not
            check._direct(module, sys._getframe(1))
            active[key] = 1
            try:
                return original(module, *args, **kwargs)
            finally:
                active.pop(key, None)

        forward.__torchcheck_forward__ = True
        cls.forward = forward

        def restore() -> None:
            if had:
                cls.forward = original
            else:
                del cls.forward

        self._restore.append(restore)

    def _direct(self, module: Any, caller: Any) -> None:
        events = self.events
        if events is None or events._depth:
            return
        from pytest_torchcheck.watch.sites import USER

        if events.sites.kind(caller.f_code.co_filename) != USER:
            return  # a library's own call: its business
        try:
            hooks = _hooks(module)
            if not hooks:
                return
            owner = type(module).__name__
            names = ", ".join(sorted({_named(h) for h in hooks}))
            self.report(events.site(1),
                        f"{owner}.forward() called directly skips the {plural(len(hooks), 'forward hook')} "
                        f"registered on it ({names}); call the module itself: module(x)")
        except Exception as e:  # a broken check must not break the user's program
            events.errors.append((self, e))
