from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import OPTIMIZER
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.training import ANY, BACKWARD, CLEAR, STEP
from lint_rules.rule import Rule
from lint_rules.rules.examples import trn102 as examples


class MissingZeroGrad(Rule):
    """
    ## What it does
    Flags an optimizer `step()` in a training loop that calls `backward()` and
    `step()` but never clears that optimizer's gradients anywhere in the loop: no
    `optimizer.zero_grad()`, no `model.zero_grad()`, no `p.grad = None`.

    ## Why is this bad?
    `backward()` adds to `.grad`; it does not overwrite it. Without clearing, every
    step applies the sum of all gradients since the start of training. The effective
    learning rate grows with the step count and training diverges or stalls, with no
    error.

    ## Example
    ```python
    optimizer.zero_grad()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
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

    Helpers of the same file called from the loop are followed (three calls deep,
    arguments bound to parameters): a `train_step(model, opt, x)` that runs
    `backward()` and `step()` is a step at its call, and a `reset_grad()` helper
    that calls `zero_grad()` clears.

    ## Known problems
    Functions imported from another file are not followed; methods called on
    `self` are, into a base class of another project file and into every
    implementation of a stub (what they all do counts). A `zero_grad()` in a
    helper counts whatever it is called on. Clearing inside a closure defined in
    the loop (the LBFGS pattern) is seen.

    ## References
    - https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html
    - https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
    """

    CODE = "TRN102"
    REQUIRES = ("backward",)
    NAME = "missing-zero-grad"
    MESSAGE = "Training loop steps this optimizer but never clears its gradients: they accumulate across steps"
    FIX_TITLE = "Call optimizer.zero_grad() once per step"

    VALID = examples.VALID
    INVALID = examples.INVALID

    def finish(self) -> None:
        facts = self.model.training
        helpers = self.model.fact(Summaries)
        direct = [ev for ev in facts.events if ev.kind == STEP]
        through_helpers = [ev for _, evs in helpers.helper_calls() for ev in evs if ev.kind == STEP]
        direct_set = set(direct)  # events are equal by value, as in a list; a set finds them at once
        for ev in direct + through_helpers:
            loop = self._training_loop_of(ev, helpers)
            if loop is None or (ev in direct_set and self._built_in(ev, loop)):
                continue
            if not self._clears(loop, ev.key, helpers):
                self.report(ev.node)

    def _training_loop_of(self, step, helpers: Summaries) -> cst.CSTNode | None:
        """Innermost loop around the step that also runs a backward (itself or in a helper)."""
        facts = self.model.training
        for loop in self.model.enclosing_loops(step.node):
            if any(e.kind == BACKWARD for e in facts.loop_events.get(id(loop), ())) \
                    or any(e.kind == BACKWARD for e in helpers.helper_events(loop)):
                return loop
        return None

    def _built_in(self, step, loop: cst.CSTNode) -> bool:
        """An optimizer constructed inside the loop is fresh every iteration (TRN203's concern)."""
        call = step.node
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if receiver is None:
            return False
        if self.model.kind_of(receiver) != OPTIMIZER and call.args:
            receiver = call.args[0].value  # scaler.step(opt)
        bindings = self.model.bindings_of(receiver) or []
        return any(self.model.is_inside(b.node, loop) for b in bindings)

    def _clears(self, loop: cst.CSTNode, key: str | None, helpers: Summaries) -> bool:
        facts = self.model.training
        for ev in facts.events_within(loop):
            if ev.kind == CLEAR and (ev.key == ANY or ev.key == key):
                return True
        # a helper's zero_grad() counts whatever it clears: its target's kind is out of sight
        return any(ev.kind == CLEAR for ev in helpers.helper_events(loop))
