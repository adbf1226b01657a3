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
- ``empty_cache()``: ``torch.cuda.empty_cache`` wrapped (a call is observed on a CPU-only build too);
- ``forward_pre(module, args)`` / ``forward_post(module, args, output)``: torch's global module forward
  hooks, registered only when a check subscribes to them (they take every module call off torch's fast
  path), called for calls through ``module(...)``, not ``module.forward(...)``;
- any other function or method: a check calls :meth:`Events.intercept` in its ``install`` with the
  dotted name of what to watch (``"torch.nn.functional.cross_entropy"``, ``"torch.Tensor.item"``) and
  its handlers, called before (``pre(args, kwargs)``) and after (``post(args, kwargs, result)``) each
  call. One wrapper per name, however many checks intercept it. ``direct=True``: only the calls made
  by code outside torch and torchcheck (the user's ``loss.item()``, not the ``.item()`` an optimizer
  makes inside ``step()``).

A handler that raises would break the user's program: its exception is recorded on the check
(:meth:`Events.errors`) and the program goes on, unless it is :class:`StopProgram`.

A wrapper is one more Python frame between the caller and torch, and a warning names the Python
frame it is issued from (torch's C++ warnings: the innermost; ``stacklevel=2``: one up): unwatched,
the caller's line; watched, the wrapper's. So, on the main thread, a warning that names a wrapper's
frame is shown at the caller's line (:func:`call_attributed` swaps ``warnings._showwarnmsg``, which
Python calls for each warning the filters let through, for the length of the call: the filters are
not touched, ``-W error`` raises inside the call as unwatched). The filters still judge it at the
wrapper's place: a ``module=`` filter sees torchcheck's module, and "once per location" is once per
message for all wrapped calls. Calls from other threads keep the wrapper's line.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import warnings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from pytest_torchcheck.watch.sites import Site, Sites

EVENTS = ("optimizer_created", "step_pre", "step_post", "grads_cleared", "backward_pre", "backward_post",
          "empty_cache", "forward_pre", "forward_post")
_LAZY = ("forward_pre", "forward_post")  # hooked only when a check subscribes: they cost every module call


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
        # dotted name -> [(pre, post, direct, owner check)], wrapped at install
        self._intercepts: dict[str, list[tuple[Any, Any, bool, object]]] = {}
        self.installed = False

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
        for name, handlers in self._intercepts.items():
            handlers[:] = [h for h in handlers if h[3] is not check]

    def intercept(self, target: str, pre: Callable[..., Any] | None = None,
                  post: Callable[..., Any] | None = None, *, direct: bool = False) -> None:
        """Call ``pre(args, kwargs)`` before and ``post(args, kwargs, result)`` after each call of the
        function or method named ``target`` (see the module's docstring). Before :meth:`install` only."""
        if self.installed:
            raise RuntimeError(f"intercept({target!r}) after the watch was installed")
        owner = getattr(pre, "__self__", None) or getattr(post, "__self__", None)
        self._intercepts.setdefault(target, []).append((pre, post, direct, owner))

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
        import torch.nn.modules.module as module_module

        if self._handlers["forward_pre"]:
            handle = module_module.register_module_forward_pre_hook(self._forward_pre)
            self._restore.append(handle.remove)
        if self._handlers["forward_post"]:
            handle = module_module.register_module_forward_hook(self._forward_post)
            self._restore.append(handle.remove)
        for target, handlers in self._intercepts.items():
            owner, name = _resolve(target)
            self._wrap(owner, name, lambda original, handlers=handlers: self._call_wrapper(original, handlers))
        self.installed = True

    def uninstall(self) -> None:
        while self._restore:
            self._restore.pop()()
        self.installed = False

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
            __tracebackhide__ = True  # pytest shows the caller's frame, as unwatched
            call_attributed(original, (opt, *args), kwargs)
            events.emit("optimizer_created", opt)

        return __init__

    def _zero_grad_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def zero_grad(owner, *args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the caller's frame, as unwatched
            events.emit("grads_cleared", owner)
            return call_attributed(original, (owner, *args), kwargs)

        return zero_grad

    def _backward_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, *args: Any,
                     **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the caller's frame, as unwatched
            events.emit("backward_pre", tensors, retain_graph, create_graph)
            result = call_attributed(original, (tensors, grad_tensors, retain_graph, create_graph, *args), kwargs)
            events.backwards += 1
            events.emit("backward_post")
            return result

        return backward

    def _empty_cache_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        events = self

        def empty_cache(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the caller's frame, as unwatched
            events.emit("empty_cache")
            return call_attributed(original, args, kwargs)

        return empty_cache

    def _call_wrapper(self, original: Callable[..., Any], handlers: list) -> Callable[..., Any]:
        events = self
        kind = self.sites.kind
        from pytest_torchcheck.watch.sites import LIBRARY

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the caller's frame, as unwatched
            if events._depth:  # a check's own call
                return original(*args, **kwargs)
            if not handlers:
                return call_attributed(original, args, kwargs)
            # direct: the caller's frame (one up) is not torch's nor torchcheck's
            direct = kind(sys._getframe(1).f_code.co_filename) != LIBRARY
            chosen = [h for h in handlers if direct or not h[2]]
            for pre, _, _, check in chosen:
                if pre is not None:
                    events._call(check, pre, args, kwargs)
            result = call_attributed(original, args, kwargs)
            for _, post, _, check in chosen:
                if post is not None:
                    events._call(check, post, args, kwargs, result)
            return result

        return wrapper

    def _call(self, check: object, handler: Callable[..., Any], *args: Any) -> None:
        self._depth += 1
        try:
            handler(*args)
        except StopProgram:
            raise
        except Exception as e:  # a broken check must not break the user's program
            self.errors.append((check, e))
        finally:
            self._depth -= 1

    def _forward_pre(self, module: Any, args: Any) -> None:
        self.emit("forward_pre", module, args)

    def _forward_post(self, module: Any, args: Any, output: Any) -> None:
        self.emit("forward_post", module, args, output)

    def _step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.emit("step_pre", optimizer)

    def _step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.steps += 1
        self.emit("step_post", optimizer)


_HERE = __file__


def call_attributed(original: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``original(*args, **kwargs)`` for a wrapper, a warning it issues that names our frame shown at the
    wrapper's caller's line instead, as unwatched (see the module's docstring). Called by the wrapper
    itself: the caller is two frames up."""
    __tracebackhide__ = True
    # what Python calls to show each warning the filters let through (a private name: where a Python
    # lacks it, warnings keep the wrapper's line)
    show = getattr(warnings, "_showwarnmsg", None)
    if show is None or threading.current_thread() is not threading.main_thread():
        return original(*args, **kwargs)
    caller = sys._getframe(2)

    def shown_at_the_caller(message: Any) -> None:
        if message.filename == _HERE:
            message.filename, message.lineno, message.line = caller.f_code.co_filename, caller.f_lineno, None
        show(message)

    warnings._showwarnmsg = shown_at_the_caller
    try:
        return original(*args, **kwargs)
    finally:
        warnings._showwarnmsg = show


def _resolve(target: str) -> tuple[Any, str]:
    """The object that holds the attribute named by a dotted ``target``, and the attribute's name:
    ``torch.Tensor.item`` -> (``torch.Tensor``, ``"item"``); the longest importable prefix is the module."""
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part)
        if not hasattr(owner, parts[-1]):
            raise AttributeError(f"cannot intercept {target!r}: {owner!r} has no attribute {parts[-1]!r}")
        return owner, parts[-1]
    raise ImportError(f"cannot intercept {target!r}: no module to import")
