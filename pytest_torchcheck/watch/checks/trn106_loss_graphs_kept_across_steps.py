"""TRN106 at run time: a variable, attribute or container of the user's keeps the graphs of earlier steps."""

from __future__ import annotations

import itertools
import sys
import weakref

from lint_rules.records import factory, record
from pytest_torchcheck.watch.check import Check, frame_locals, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

    from pytest_torchcheck.watch.sites import Site

MARK = "torchcheck_backward_step"  # key in a backward root's node metadata: the step count at that backward
EARLIER = 3  # a holder reaching the losses of this many earlier steps grows; one or two may be deliberate
FIRST, EVERY = 4, 8  # the steps whose end is looked at: the 4th, then every 8th
FRAMES = 8  # user frames looked at, from the step's call site outwards
ELEMENTS = 16  # the last elements of a list looked at
ENTRIES = 32  # entries of a dict, attributes of an object looked at
NODES = 5_000  # graph operations walked per look, over all holders: a look never costs more than a step
ADDS = 256  # additions remembered while armed
# a backward's root and the operations just below it are marked: the terms of a summed loss (box, objectness
# and class losses kept one by one) belong to that step as much as their sum does
MARK_DEPTH, MARK_NODES = 4, 64


@record
class _Suspect:
    holder: str
    steps: list  # the earlier steps whose losses it reaches, sorted
    site: Site | None  # the step() where it was seen
    at: int  # the watch's step count then


@record
class _State:
    suspects: dict = factory(dict)  # holder -> _Suspect, seen at the last look
    adds: list = factory(list)  # (weakref to the result, site) of the user's additions since that look


class LossGraphsKeptAcrossSteps(Check):
    """
    Observed: the tensor each ``backward()`` runs on, and the operations just below it (the terms of a
    summed loss), are marked with the step count at that backward (a key in their graph nodes'
    ``metadata``; nothing is held). At the end of the 4th optimizer step and of
    every 8th after it, the local variables of your frames on the stack of the ``step()`` call (the
    step's caller and its callers in your code), the public attributes of your objects among them, and
    the last entries of lists and dicts among those are looked at: a tensor there whose graph reaches the
    losses of at least three earlier steps (walked from the tensor, a bounded number of operations) keeps
    those steps' graphs alive, and more with every step. The next step's additions made by your code
    (``+``, ``+=``) are then watched: the finding is reported at the addition whose result that holder
    holds (``total_loss += loss``), else at the ``step()`` (``losses.append(loss)``), naming the holder.
    Never reported: ``loss.item()`` or ``loss.detach()`` accumulated, a loss kept for one or two more
    steps (``prev_loss = loss``), micro-batch losses summed within one step before its ``backward()``, a
    GAN's two losses, tensors held only by torch or by an installed package's objects, and a program
    whose optimizer is built with ``differentiable=True`` (a meta-loss summed over unrolled steps).
    """

    CODE = "TRN106"
    NAME = "loss-accumulated-with-graph"
    SEVERITY = "error"

    def __init__(self) -> None:
        super().__init__()
        self._state = _State()
        self._armed = False
        self._done: set[str] = set()  # holders reported
        self._user_types: dict[type, bool] = {}
        self._unrolled = False

    def install(self, events: Any) -> None:
        super().install(events)
        for name in ("__add__", "__radd__", "__iadd__"):
            events.intercept(f"torch.Tensor.{name}", post=self._added, direct=True)

    def on_backward_pre(self, tensors: Any, retain_graph: Any, create_graph: Any) -> None:
        import torch

        for t in [tensors] if isinstance(tensors, torch.Tensor) else tensors:
            fn = getattr(t, "grad_fn", None)
            if fn is not None:
                _mark(fn, self.events.steps)

    def _added(self, args: Any, kwargs: Any, result: Any) -> None:
        if self._armed and len(self._state.adds) < ADDS and getattr(result, "grad_fn", None) is not None:
            self._state.adds.append((weakref.ref(result), self.site()))

    def on_step_post(self, optimizer: Any) -> None:
        if optimizer.defaults.get("differentiable"):
            self._unrolled = True  # steps inside the graph: a meta-loss over them is the point
        if self._unrolled:
            return
        steps = self.events.steps
        if not self._armed and (steps < FIRST or (steps - FIRST) % EVERY):
            return
        step = self.site()
        found = self._look(steps)
        armed, self._armed = self._armed, False
        previous, adds = self._state.suspects, self._state.adds
        self._state = _State()
        for holder, (tensors, earlier) in found.items():
            if holder in self._done:
                continue
            if not armed or holder not in previous:
                self._state.suspects[holder] = _Suspect(holder, earlier, step, steps)
                self._armed = True
                continue
            grown = next((site for ref, site in adds if any(ref() is t for t in tensors)), None)
            self._report(holder, earlier, grown or previous[holder].site, steps)

    def finish(self) -> None:
        if self._unrolled:
            return
        # the program ended before the step that would have shown which line grows it
        for holder, suspect in self._state.suspects.items():
            if holder not in self._done:
                self._report(holder, suspect.steps, suspect.site, suspect.at)
        self._state = _State()

    def _report(self, holder: str, earlier: list, site: Site | None, steps: int) -> None:
        self._done.add(holder)
        self.report(site,
                    f"`{holder}` holds a tensor whose autograd graph reaches the losses of "
                    f"{plural(len(earlier), 'earlier optimizer step')} (steps {earlier[0] + 1} to "
                    f"{earlier[-1] + 1}, seen at the end of step {steps}): every step's graph is kept alive and "
                    "memory grows each step; accumulate loss.detach() or loss.item()")

    # -- what the user's frames hold

    def _look(self, steps: int) -> dict[str, tuple[list, list]]:
        """holder -> (its tensors, the earlier steps whose losses they reach), for the holders reaching at
        least EARLIER of them."""
        budget = [NODES]
        out: dict[str, tuple[list, list]] = {}
        groups: dict[str, list] = {}
        for holder, tensor in self._holders():
            groups.setdefault(holder, []).append(tensor)
        for holder, tensors in groups.items():
            earlier = sorted(m for m in _marks(tensors, budget) if m < steps - 1)
            if len(earlier) >= EARLIER:
                out[holder] = (tensors, earlier)
            if budget[0] <= 0:
                break
        return out

    def _holders(self) -> Iterator[tuple[str, Any]]:
        from pytest_torchcheck.watch.sites import USER

        kind = self.events.sites.kind
        frame, seen_frames = sys._getframe(1), 0
        seen_objects: set[int] = set()
        while frame is not None and seen_frames < FRAMES:
            if kind(frame.f_code.co_filename) == USER:
                seen_frames += 1
                for name, value in list(itertools.islice(frame_locals(frame).items(), 256)):
                    if name.startswith("__"):
                        continue
                    yield from _tensors_in(name, value)
                    if self._is_user_object(value) and id(value) not in seen_objects:
                        seen_objects.add(id(value))
                        for attr, item in list(itertools.islice(vars(value).items(), ENTRIES)):
                            if not attr.startswith("_"):
                                yield from _tensors_in(f"{name}.{attr}", item)
            frame = frame.f_back

    def _is_user_object(self, value: Any) -> bool:
        from pytest_torchcheck.watch.sites import USER

        cls = type(value)
        known = self._user_types.get(cls)
        if known is None:
            module = sys.modules.get(getattr(cls, "__module__", ""), None)
            path = getattr(module, "__file__", None)
            known = self._user_types[cls] = (path is not None and not isinstance(value, type)
                                             and hasattr(value, "__dict__") and self.events.sites.kind(path) == USER)
        return known


def _tensors_in(holder: str, value: Any) -> Iterator[tuple[str, Any]]:
    """The tensors with a graph that ``value`` holds: itself, the last elements of a list or tuple, the
    entries of a dict (and the last elements of lists there), named as the user would write them."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.grad_fn is not None:
            yield holder, value
    elif isinstance(value, (list, tuple)):
        for item in value[-ELEMENTS:]:
            if isinstance(item, torch.Tensor):
                if item.grad_fn is not None:
                    yield holder, item
            elif isinstance(item, dict):  # a step's output dict kept whole
                for entry in itertools.islice(item.values(), ENTRIES):
                    if isinstance(entry, torch.Tensor) and entry.grad_fn is not None:
                        yield holder, entry
    elif isinstance(value, dict):
        for key, entry in list(itertools.islice(value.items(), ENTRIES)):
            if isinstance(key, (str, int)) and isinstance(entry, (torch.Tensor, list, tuple)):
                yield from _tensors_in(f"{holder}[{key!r}]", entry)


def _mark(root: Any, steps: int) -> None:
    """Mark ``root`` and the operations up to MARK_DEPTH below it with the step count (a node already
    marked keeps its earlier step: it belongs to the graph that used it first)."""
    level, seen, left = [root], {id(root)}, MARK_NODES
    for _ in range(MARK_DEPTH + 1):
        below = []
        for node in level:
            if left <= 0:
                return
            left -= 1
            if type(node).__name__ == "AccumulateGrad":
                continue
            node.metadata.setdefault(MARK, steps)
            for n, _ in node.next_functions:
                if n is not None and id(n) not in seen:
                    seen.add(id(n))
                    below.append(n)
        level = below


def _marks(tensors: list, budget: list) -> set:
    """The backward marks reachable from ``tensors``' graphs; a marked node is not walked below."""
    marks: set = set()
    seen: dict[int, Any] = {}  # held while walking, so that the ids stay theirs
    todo = [t.grad_fn for t in tensors]
    while todo and budget[0] > 0:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        budget[0] -= 1
        mark = node.metadata.get(MARK) if type(node).__name__ != "AccumulateGrad" else None
        if mark is not None:
            marks.add(mark)
            continue
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return marks
