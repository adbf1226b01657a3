from __future__ import annotations

from bisect import bisect_left

import libcst as cst

from lint_rules.analysis.kinds import SCALER
from lint_rules.analysis.model import ASSIGN
from lint_rules.analysis.training import BACKWARD
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn803 as examples

_CLIPS = frozenset({
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm",
    "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm",
})
_CLIP_LEAVES = frozenset(q.rsplit(".", 1)[1] for q in _CLIPS)

SCALED = "scaled"  # scaler.scale(loss).backward()
PLAIN = "plain"  # any other backward
UNSCALE = "unscale"  # scaler.unscale_(optimizer)


class GradientClippingBeforeUnscale(Rule):
    """
    ## What it does
    Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` that runs after
    `scaler.scale(loss).backward()` with no `scaler.unscale_(optimizer)` in between,
    reading statement order within one function (or the module), skipping branches
    that exclude each other (`if use_amp: ... else: ...`).

    ## Why is this bad?
    `GradScaler` multiplies the loss by a scale factor (65536 to start), so the
    gradients that `backward()` writes are scaled by it too. Clipping them before
    `unscale_()` compares the *scaled* norm with `max_norm`: the gradients are
    clipped to a tiny fraction of the threshold on almost every step, which acts like
    a learning rate thousands of times too small. Training crawls or stalls, with no
    error or warning.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    Use instead:
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Known problems
    Clipping through your own helper (`utils.clip(model)`) and backward/unscale calls
    in other functions are not followed. Several optimizers sharing one scaler are
    not told apart: an `unscale_` of any of them counts. A scaler is recognised from
    its construction (`torch.amp.GradScaler`), a type annotation, or, as a last
    resort, a name such as `scaler` or `grad_scaler`.

    ## References
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    - https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_
    """

    CODE = "TRN803"
    REQUIRES = ("clip_grad",)
    NAME = "gradient-clipping-before-unscale"
    MESSAGE = "Gradients are clipped while still scaled by the GradScaler: call scaler.unscale_(optimizer) first"
    FIX_TITLE = "Call scaler.unscale_(optimizer) before clipping"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def finish(self) -> None:
        model = self.model
        clips: list[cst.Call] = []
        marks: list[tuple[int, str, cst.Call]] = []
        for call in model.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute):
                leaf = func.attr.value
                if leaf in _CLIP_LEAVES and model.qualified_name(func) in _CLIPS:
                    clips.append(call)
                elif leaf == "unscale_" and model.kind_of(func.value) == SCALER:
                    marks.append((model.order[id(call)], UNSCALE, call))
            elif isinstance(func, cst.Name) and model.qualified_name(func) in _CLIPS:
                clips.append(call)  # any local alias of an imported clip function
        if not clips:
            return
        for ev in model.training.events:
            if ev.kind == BACKWARD:
                marks.append((ev.index, SCALED if self._is_scaled(ev.node) else PLAIN, ev.node))
        marks.sort(key=lambda m: m[0])
        by_function: dict[int, list[tuple[int, str, cst.Call]]] = {}  # each clip looks only at its own function's
        for mark in marks:
            by_function.setdefault(id(model.enclosing_function(mark[2])), []).append(mark)
        for clip in clips:
            if self._last_mark(clip, by_function.get(id(model.enclosing_function(clip)), [])) == SCALED:
                self.report(clip)

    def _last_mark(self, clip: cst.Call, marks: list[tuple[int, str, cst.Call]]) -> str | None:
        """The kind of the last backward/unscale_ before ``clip`` among ``marks`` (those of its own
        function, in document order)."""
        model = self.model
        index = model.order[id(clip)]
        for order, kind, node in reversed(marks[:bisect_left(marks, index, key=lambda m: m[0])]):
            if model.mutually_exclusive(node, clip):
                continue
            return kind
        return None

    def _is_scaled(self, backward: cst.Call) -> bool:
        """`scaler.scale(loss).backward()`, or `.backward()` on a name bound to `scaler.scale(...)`."""
        func = backward.func
        if not isinstance(func, cst.Attribute):
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name):
            bindings = self.model.bindings_of(receiver)
            if bindings and len(bindings) == 1 and bindings[0].kind == ASSIGN:
                receiver = bindings[0].value
        return isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
            and receiver.func.attr.value == "scale" and self.model.kind_of(receiver.func.value) == SCALER
