from __future__ import annotations

import libcst as cst

from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.guards import guards_within
from lint_rules.analysis.training import ANY, BACKWARD, CLEAR, STEP, Event, wiped_accumulations
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn101 as examples


ACCUMULATION_MESSAGE = ("Gradients are cleared every micro-batch while step() runs only every few: "
                        "the accumulated gradients are wiped and the step sees only the last micro-batch")


class ZeroGradBetweenBackwardAndStep(Rule):
    """
    ## What it does
    Flags clearing gradients (`optimizer.zero_grad()`, `model.zero_grad()`,
    `p.grad = None`, `p.grad.zero_()`) after a `backward()` and before the `step()`
    of the same optimizer, with no other `backward()` in between. A reset of the
    gradients of parameters picked in a loop (`if "prototypes" in name: p.grad = None`)
    freezes those on purpose and is not a clear. Statement order is
    read within one loop iteration (wrapping around to the top of the loop) or
    within one function body. Calls of helpers of the same file count with what
    they do (three calls deep): a `reset_grad()` helper is a clear at its call, a
    `compute_loss_and_backward()` helper a backward.

    With gradient accumulation it also flags a clear that runs on every micro-batch
    (unconditionally in the loop body, or in a per-batch function such as a
    Lightning `training_step` with manual optimisation) while the `step()` of that
    optimizer runs only under an accumulation condition (`if (i + 1) % accum == 0:`,
    a `%` or an `accum...` name in the test) and `backward()` runs outside it.

    ## Why is this bad?
    `backward()` writes the gradients, `zero_grad()` erases them, and `step()` then
    applies all-zero (or `None`) gradients. The loss never goes down, and nothing
    raises: the run burns its whole budget training nothing. With accumulation, the
    step sees only the last micro-batch: the effective batch is `accum` times
    smaller than configured, the loss scaled by `1 / accum` makes the steps that
    much smaller too, and training is noisier and slower with no error anywhere.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
    ```

    Use instead:
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Known problems
    Helpers of the same file are followed three calls deep, and methods called on
    `self` into a base class of another project file or into every implementation
    of a stub (what they all do counts); a clear, backward or step in a function
    imported from another module or a deeper call is not seen. An optimizer is recognised
    from its construction (`torch.optim.*`), a type annotation, or, as a last
    resort, a name such as `optimizer` or `opt_g`. The accumulation check needs
    the step's `if` to look like accumulation (a `%`, or a name containing
    `accum`); a step skipped under another condition (`if torch.isfinite(loss):`)
    is not accumulation and stays quiet, and so does a clear under any `if`
    (`if i % accum == 0: opt.zero_grad()` opens a window correctly). An
    accumulation window kept by an early `continue` is not followed. A
    `model.zero_grad()` is not tied to an optimizer, so it is judged only when no
    optimizer steps on every pass (a GAN's discriminator that does).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
    - https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html
    - https://lightning.ai/docs/pytorch/stable/model/manual_optimization.html
    """

    CODE = "TRN101"
    # "backward": the clear may be a helper's, of another file (an inherited `self.reset_grads()`)
    REQUIRES = ("zero_grad", ".grad", "backward")
    NAME = "zero-grad-between-backward-and-step"
    MESSAGE = "Gradients are cleared after backward() and before step(): the step applies zero gradients"
    FIX_TITLE = "Move zero_grad() before backward() or after step()"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def finish(self) -> None:
        facts = self.model.training
        helpers = self.model.fact(Summaries)
        helper_calls = helpers.helper_calls()
        if not facts.events and not helper_calls:
            return
        # only a helper that just clears is reported at its call; one that also runs
        # backward()/step() is judged in its own body
        clear_only = {id(call) for call, evs in helper_calls if all(e.kind == CLEAR for e in evs)}
        judged_inside = {id(call) for call, _ in helper_calls} - clear_only
        regions: dict[int, cst.CSTNode] = {k: facts.loops[k] for k in facts.loops}
        for ev in (*facts.events, *(e for _, evs in helper_calls for e in evs)):
            for loop in self.model.enclosing_loops(ev.node):
                regions.setdefault(id(loop), loop)
            fn = facts._region_of_function(ev.node)
            regions.setdefault(id(fn), fn)
        for region in regions.values():
            events = sorted((*facts.region_events(region), *helpers.helper_events(region)),
                            key=lambda e: e.index)
            cyclic = isinstance(region, (cst.For, cst.While))
            for i, ev in enumerate(events):
                if ev.kind == CLEAR and id(ev.node) not in judged_inside \
                        and self._clears_before_step(events, i, cyclic):
                    self.report(ev.node)
            if region is not self.model.module or cyclic:
                kept = [e for e in events if e.kind != CLEAR or self._clears_always(e, helpers)]
                for ev in wiped_accumulations(self.model, kept, region):
                    self.report(ev.node, ACCUMULATION_MESSAGE)

    def _clears_always(self, clear: Event, helpers: Summaries) -> bool:
        """A clear of this file, or a helper call whose own zero_grad() is under no `if`."""
        fn = helpers.local_function(clear.node.func) if isinstance(clear.node, cst.Call) else None
        return fn is None or all(guards_within(self.model, e.node, fn) == []
                                 for e in helpers.of(fn).effects if e.kind == CLEAR)

    def _clears_before_step(self, events: list[Event], i: int, cyclic: bool) -> bool:
        clear = events[i]
        model = self.model
        # A backward must have run before the clear in this iteration (or, in a
        # loop, anywhere in the body: the previous iteration's).
        before = events[:i] if not cyclic else events[:i] + events[i + 1:]
        if not any(e.kind == BACKWARD and not model.mutually_exclusive(e.node, clear.node)
                   for e in before):
            return False
        after = events[i + 1:] + (events[:i] if cyclic else [])
        for e in after:
            if model.mutually_exclusive(e.node, clear.node):
                continue
            if e.kind == BACKWARD:
                return False
            if e.kind == STEP and (clear.key == ANY or e.key == clear.key):
                return True
            if e.kind == CLEAR and e.key == clear.key:
                return False  # the next clear is the one to judge
        return False
