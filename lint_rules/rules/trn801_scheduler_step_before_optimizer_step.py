from __future__ import annotations

import libcst as cst

from lint_rules.analysis.guards import from_an_iteration_on
from lint_rules.analysis.kinds import OPTIMIZER, SCHEDULER
from lint_rules.analysis.model import ASSIGN, dotted, keyword_arg
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.training import STEP
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn801 as examples

# Schedulers whose step() takes a metric and has no "first value" to skip.
_METRIC_SCHEDULERS = frozenset({"torch.optim.lr_scheduler.ReduceLROnPlateau"})


class SchedulerStepBeforeOptimizerStep(Rule):
    """
    ## What it does
    Flags an argument-less `scheduler.step()` that runs before `optimizer.step()` in
    statement order within one iteration of a loop, or within one function body. The
    optimizer step may be a direct `optimizer.step()`, a `scaler.step(optimizer)`, or a
    call to a function in the same file that steps the optimizer
    (`train_one_epoch(...)`). A `scheduler.step()` after the inner batch loop (an
    epoch-level scheduler) is read in order and is fine. So is a schedule placed on
    purpose: stepped only from some iteration on (`if epoch > decay_start:
    scheduler.step()`, every earlier epoch used the first rate), or built at a given
    epoch (`MultiStepLR(opt, milestones, last_epoch=start_epoch - 1)`).

    ## Why is this bad?
    Since PyTorch 1.1, `scheduler.step()` must follow `optimizer.step()`. Called
    first, it advances the schedule before the first update, so the first learning
    rate of the schedule is never used and every later one comes one step (or one
    epoch) early: warm-up starts above its base value, a `StepLR(step_size=30)` decays
    after 29 epochs, a `OneCycleLR` reaches its final value one step early. PyTorch
    only warns once ("Detected call of `lr_scheduler.step()` before
    `optimizer.step()`"), and the run trains on a shifted schedule.

    ## Example
    ```python
    for epoch in range(epochs):
        scheduler.step()
        train_one_epoch(model, loader, optimizer)
    ```

    Use instead:
    ```python
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
        scheduler.step()
    ```

    Confidence: a step of the optimizer in sight (in the loop, or in a function of
    the project it calls) after `scheduler.step()` is *certain*. When no step is in
    sight but the loop hands the optimizer, only after `scheduler.step()`, to a call
    whose code is out of sight (`train_one_epoch(model, loader, optimizer)` from an
    installed package), that call is most likely where it steps: *possible*
    (`--preview`).

    ## Known problems
    A scheduler is recognised from its construction (`torch.optim.lr_scheduler.*`), a
    type annotation, or, as a last resort, a name such as `scheduler` or
    `lr_sched`. `step(value)` calls are skipped: they pass the epoch or a metric
    explicitly (`ReduceLROnPlateau`, timm and diffusers schedulers), so the order
    does not shift anything. Optimizer steps in helpers are seen in functions of
    this file (three calls deep), in top-level functions of the project's other
    files (`engine.run_epoch(model, loader, optimizer)`) whose own body calls
    `optimizer.step()`, and in methods called on `self`: inherited from a base
    class of this file or of another project file, or, for a stub such as an
    abstract `_train_epoch()`, every implementation in the subclasses of the
    project (all of them must step). Deeper chains across files are not.

    ## References
    - https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate
    - https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.LRScheduler.html
    """

    CODE = "TRN801"
    REQUIRES = ("step",)
    NAME = "scheduler-step-before-optimizer-step"
    MESSAGE = "scheduler.step() runs before optimizer.step(): the first learning rate of the schedule is skipped"
    FIX_TITLE = "Call scheduler.step() after optimizer.step()"
    SEVERITY = WARNING

    VALID = examples.VALID
    INVALID = examples.INVALID

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "step" or node.args:
            return
        receiver = func.value
        model = self.model
        if model.kind_of(receiver) != SCHEDULER:
            return
        construction = self._construction(receiver)
        if construction is not None and model.qualified_name(construction.func) in _METRIC_SCHEDULERS:
            return
        optimizer = _optimizer_key(construction)
        region = self._region(node)
        steps = self._optimizer_steps(region, node, optimizer)
        if not steps:
            self._handed_over(node, region, optimizer)
            return
        index = model.order[id(node)]
        before = [s for s in steps if model.order[id(s)] < index]
        after = [s for s in steps if model.order[id(s)] > index]
        if after and not before and not self._positioned(node, construction, region):
            self.report(node)

    def _positioned(self, sched_step: cst.Call, construction: cst.Call | None, region: cst.CSTNode) -> bool:
        """The schedule's position is set on purpose, so stepping first skips nothing: it is built at a
        given epoch (``MultiStepLR(opt, ms, last_epoch=start_epoch - 1)``), or stepped only from some
        epoch on (``if epoch > decay_start: scheduler.step()``: every epoch before used the first rate)."""
        if construction is not None:
            last = keyword_arg(construction, "last_epoch")
            if last is not None and not (isinstance(last.value, cst.UnaryOperation)
                                         and isinstance(last.value.expression, cst.Integer)):
                return True
        return from_an_iteration_on(self.model, sched_step, region)

    def _handed_over(self, sched_step: cst.Call, region: cst.CSTNode, optimizer: str | None) -> None:
        """No step of the scheduler's optimizer is in sight, but the loop hands that optimizer to a
        call whose code is out of sight (``train_one_epoch(model, loader, optimizer)`` from an installed
        package) only after ``scheduler.step()``: that call is where the optimizer steps, so the
        schedule runs one step ahead. Possible: the call might not step it."""
        model = self.model
        if not isinstance(region, (cst.For, cst.While)) \
                or any(ev.kind == STEP and (optimizer is None or ev.key in (None, optimizer))
                       for ev in model.training.events):
            return

        def the_optimizer(arg: cst.Arg) -> bool:  # the scheduler's, or any optimizer when that is unknown
            if optimizer is not None:
                return dotted(arg.value) == optimizer
            return isinstance(arg.value, (cst.Name, cst.Attribute)) and model.kind_of(arg.value) == OPTIMIZER

        helpers = model.fact(Summaries)
        index = model.order[id(sched_step)]
        handed = [call for call in model.within(cst.Call, region)
                  if self._in_region(call, region) and not model.mutually_exclusive(call, sched_step)
                  and any(the_optimizer(a) for a in call.args) and helpers.unknown_callee(call)]
        if handed and all(model.order[id(call)] > index for call in handed):
            name = dotted(handed[0].func) or "a call"
            self.report(sched_step, f"scheduler.step() runs before {name}(), which is handed the optimizer and "
                                    f"steps it out of sight: the first learning rate of the schedule is skipped",
                        certain=False)

    def _region(self, node: cst.CSTNode) -> cst.CSTNode:
        """The innermost loop whose body holds ``node``, else its function (or module)."""
        model = self.model
        child = node
        for anc in model.ancestors(node):
            if isinstance(anc, (cst.For, cst.While)) and model.in_loop_body(child, anc):
                return anc
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return anc
            child = anc
        return model.module

    def _optimizer_steps(self, region: cst.CSTNode, sched_step: cst.Call,
                         optimizer: str | None) -> list[cst.CSTNode]:
        """Optimizer steps (and calls of local functions that step one) in ``region``,
        outside nested functions and not in a branch exclusive with ``sched_step``."""
        model = self.model
        facts = model.training
        out: list[cst.CSTNode] = []
        # only nodes inside the region can be in it: a loop's, or its function's (the module's)
        loop = isinstance(region, (cst.For, cst.While))
        for ev in (facts.events_within(region) if loop else
                   facts.function_events(None if region is model.module else region)):
            if ev.kind != STEP:
                continue
            if optimizer is not None and ev.key is not None and ev.key != optimizer:
                continue
            if self._in_region(ev.node, region) and not model.mutually_exclusive(ev.node, sched_step):
                out.append(ev.node)
        # a call of a function that steps one, whichever it runs: a function of this file or of another
        # project file, or every implementation of a `self.<method>()` (this file's and its subclasses')
        if any(ev.kind == STEP for ev in facts.events) or getattr(model, "project_facts", None) is not None:
            helpers = model.fact(Summaries)
            for call in (model.within(cst.Call, region) if loop else
                         model.owned(cst.Call, None if region is model.module else region)):
                if isinstance(call.func, (cst.Name, cst.Attribute)) and self._in_region(call, region) \
                        and helpers.steps_optimizer(call) and not model.mutually_exclusive(call, sched_step):
                    out.append(call)
        return out

    def _in_region(self, node: cst.CSTNode, region: cst.CSTNode) -> bool:
        model = self.model
        if isinstance(region, (cst.For, cst.While)):
            child = node
            for anc in model.ancestors(node):
                if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                    return False
                if anc is region:
                    return child is region.body
                child = anc
            return False
        return model.enclosing_function(node) is (region if region is not model.module else None)

    def _construction(self, receiver: cst.CSTNode) -> cst.Call | None:
        bindings = self.model.bindings_of(receiver)
        values = [b.value for b in bindings or () if b.kind == ASSIGN and isinstance(b.value, cst.Call)]
        return values[0] if len(values) == 1 and len(bindings) == 1 else None


def _optimizer_key(construction: cst.Call | None) -> str | None:
    """The optimizer a scheduler was built on, as its spelling (``optimizer``, ``self.opt``)."""
    if construction is None:
        return None
    arg = keyword_arg(construction, "optimizer")
    if arg is None:
        positional = [a for a in construction.args if a.keyword is None and not a.star]
        if not positional:
            return None
        arg = positional[0]
    return dotted(arg.value)
