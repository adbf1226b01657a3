"""The torch entry points a watch observes, patched while it is active and restored after.

One :class:`Events` patches each entry point once and calls every subscribed check's handler for it,
so checks never patch torch themselves and two checks watching ``step()`` cost one wrapper. What is
observed, and how:

- ``optimizer_created(optimizer)``: ``torch.optim.Optimizer.__init__`` wrapped (every optimizer,
  subclasses included, runs it through ``super().__init__``);
- ``step_pre(optimizer)`` / ``step_post(optimizer)``: torch's global optimizer step hooks;
- ``grads_cleared(optimizer_or_module)``: ``Optimizer.zero_grad`` and ``Module.zero_grad`` wrapped,
  called before they clear;
- ``backward_pre(tensors, retain_graph, create_graph)`` / ``backward_post()``: ``torch.autograd.backward``
  wrapped (``Tensor.backward`` calls it);
- ``empty_cache()``: ``torch.cuda.empty_cache`` wrapped (a call is observed on a CPU-only build too).

A handler that raises would break the user's program: its exception is recorded on the check
(:meth:`Events.errors`) and the program goes on, unless it is :class:`StopProgram`.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from pytest_torchcheck.watch.sites import Site, Sites

EVENTS = ("optimizer_created", "step_pre", "step_post", "grads_cleared", "backward_pre", "backward_post",
          "empty_cache")


class StopProgram(SystemExit):
    """Raised from a handler to end the watched program cleanly (``--max-steps``): a ``SystemExit``, so
    the program's ``except Exception`` blocks let it through and its ``finally`` blocks run."""


class Events:
    """The patched entry points and their subscribers. Counters every check may read:
    ``backwards`` (backward calls so far) and ``steps`` (optimizer steps so far)."""

    def __init__(self, sites: Sites) -> None:
        self.sites = sites
        self.backwards = 0
        self.steps = 0
        self._handlers: dict[str, list[Callable[..., Any]]] = {name: [] for name in EVENTS}
        self._restore: list[Callable[[], None]] = []
        self.errors: list[tuple[object, BaseException]] = []
        self._depth = 0  # >0 while a handler runs: torch calls made by a check are not events

    def site(self, depth: int = 1) -> Site | None:
        """The user's statement that made the call being handled."""
        return self.sites.current(depth + 1)

    # -- subscriptions

    def subscribe(self, check: object) -> None:
        for name in EVENTS:
            handler = getattr(check, f"on_{name}", None)
            if handler is not None:
                self._handlers[name].append(handler)

    def unsubscribe(self, check: object) -> None:
        for name in EVENTS:
            self._handlers[name] = [h for h in self._handlers[name] if getattr(h, "__self__", None) is not check]

    def emit(self, name: str, *args: Any) -> None:
        if self._depth:
            return
        self._depth += 1
        try:
            for handler in self._handlers[name]:
                try:
                    handler(*args)
                except StopProgram:
                    raise
                except Exception as e:  # a broken check must not break the user's program
                    self.errors.append((getattr(handler, "__self__", handler), e))
        finally:
            self._depth -= 1

    # -- patches

    def install(self) -> None:
        import torch
        import torch.optim.optimizer as optim_module

        self._wrap(torch.optim.Optimizer, "__init__", self._init_wrapper)
        self._wrap(torch.optim.Optimizer, "zero_grad", self._zero_grad_wrapper)
        self._wrap(torch.nn.Module, "zero_grad", self._zero_grad_wrapper)
        self._wrap(torch.autograd, "backward", self._backward_wrapper)
        import torch.cuda.memory

        for owner in (torch.cuda, torch.cuda.memory):
            self._wrap(owner, "empty_cache", self._empty_cache_wrapper)
        pre = optim_module.register_optimizer_step_pre_hook(self._step_pre)
        post = optim_module.register_optimizer_step_post_hook(self._step_post)
        self._restore += [pre.remove, post.remove]

    def uninstall(self) -> None:
        while self._restore:
            self._restore.pop()()

    def _wrap(self, owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        had = name in vars(owner)
        original = vars(owner)[name] if had else getattr(owner, name)
        wrapper = functools.wraps(original)(make(original))
        wrapper.__torchcheck_original__ = original
        setattr(owner, name, wrapper)

        def restore() -> None:
            if had:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

        self._restore.append(restore)

    def _init_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def __init__(opt, *args: Any, **kwargs: Any) -> None:
            original(opt, *args, **kwargs)
            events.emit("optimizer_created", opt)

        return __init__

    def _zero_grad_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def zero_grad(owner, *args: Any, **kwargs: Any) -> Any:
            events.emit("grads_cleared", owner)
            return original(owner, *args, **kwargs)

        return zero_grad

    def _backward_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, *args: Any,
                     **kwargs: Any) -> Any:
            events.emit("backward_pre", tensors, retain_graph, create_graph)
            result = original(tensors, grad_tensors, retain_graph, create_graph, *args, **kwargs)
            events.backwards += 1
            events.emit("backward_post")
            return result

        return backward

    def _empty_cache_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def empty_cache(*args: Any, **kwargs: Any) -> Any:
            events.emit("empty_cache")
            return original(*args, **kwargs)

        return empty_cache

    def _step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.emit("step_pre", optimizer)

    def _step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.steps += 1
        self.emit("step_post", optimizer)
