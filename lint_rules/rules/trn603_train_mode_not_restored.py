from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.evaluation import EVAL, TRAIN, FileFacts
from lint_rules.analysis.mode_flow import CALL, TRAINING, ModeEvent, ModeFlow
from lint_rules.analysis.training import BACKWARD, STEP
from lint_rules.rule import WARNING, Rule
from lint_rules.rules.examples import trn603 as examples

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_EXITS = (cst.Break, cst.Return, cst.Raise)
CLASS_MESSAGE = ("`{model}` is switched to eval mode here, another method of this class trains it, and nothing "
                 "in this file switches it back with {model}.train(): every pass after this one trains with "
                 "dropout off and batch-norm statistics frozen")


class TrainModeNotRestored(Rule):
    """
    ## What it does
    Flags a `model.eval()` (or `model.train(False)`) in an epoch loop that is
    followed, in the loop's next iteration, by training (a `backward()` or an
    optimizer step) with no `model.train()` in between. One iteration is read in
    statement order, wrapping around to the top of the loop, and calls of
    functions defined in the same file are followed (`train(model, ...)` that
    starts with `model.train()`, `validate(model, ...)` that ends with
    `model.eval()`), with their parameters mapped to the arguments. Only models
    that are trained in the loop count, so evaluating an EMA or teacher copy is
    fine.

    Also flags a `self.model.eval()` in a method of a class (not a module) when
    another method of the class trains `self.model` in a training loop and no call
    in the file ever puts `self.model` back in train mode: a trainer whose test and
    train passes are methods called in turn by an epoch loop elsewhere
    (`trainer.train(ts)`, `trainer.test(vs)`).

    ## Why is this bad?
    The first epoch trains correctly; after the first validation, every later
    epoch trains in evaluation mode: dropout is off (the regularisation is gone,
    the model overfits) and batch norm stops updating its running statistics and
    normalises with stale ones. The loss curve looks plausible, and the final
    accuracy is silently worse.

    ## Example
    ```python
    for epoch in range(epochs):
        for x, y in train_loader:
            ...
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(x), y) for x, y in val_loader)
    ```

    Use instead:
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            ...
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(x), y) for x, y in val_loader)
    ```

    ## Known problems
    Functions from other modules are not followed: a `train_one_epoch()` imported
    from elsewhere that calls `model.train()` itself is not seen, and neither is a
    training step inside it, so such loops are not checked (missed rather than
    flagged). Any `model.train()` on the same model counts as restoring the mode,
    even one under a condition. An evaluation on the last iteration only
    (`if epoch == epochs - 1:`) is still flagged unless it leaves the loop.
    An `eval()` in one branch of an `if` whose other branch calls `train()` is
    taken as a per-pass choice of mode and never flagged. Helpers of this file are
    followed three calls deep, and a constant argument (`set_mode(model, "train")`)
    selects the branch of `if mode == "train":` that runs. A model counts as
    trained in the loop when it is called there with autograd on, also inside a
    loss helper of this file, or when it is passed to any call whose result is
    backpropagated (`loss = dsm_loss(score, x)`, with `dsm_loss` imported): a
    teacher handed to such a distillation loss, and put in `eval()` inside the
    loop, is taken for a trained model.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    """

    CODE = "TRN603"
    REQUIRES = ("eval", "train")
    NAME = "train-mode-not-restored"
    MESSAGE = ("The model is left in eval mode here and nothing calls model.train() before the next training "
               "step: later epochs train with dropout off and batch-norm statistics frozen")
    FIX_TITLE = "Call model.train() at the start of each epoch's training"
    SEVERITY = WARNING  # wrong on some paths only: not an error (see README, Severity)

    VALID = examples.VALID
    INVALID = examples.INVALID

    def __init__(self, model: "FileModel") -> None:
        super().__init__(model)
        self._facts = model.fact(FileFacts)

    def finish(self) -> None:
        model = self.model
        facts = self._facts
        if not any(mode == EVAL for _, _, mode in facts.mode_calls()):
            return
        if not any(e.kind in (BACKWARD, STEP) for e in model.training.events):
            return
        flow = model.fact(ModeFlow)
        # a trainer class: def _test(self): self.model.eval() ...; def _train(self): loss.backward() ...
        for call, attr in flow.evals_never_undone():
            self.report(call, CLASS_MESSAGE.format(model=attr))
        for loop in (*model.nodes(cst.For), *model.nodes(cst.While)):
            events = flow.loop_events(loop)
            if not any(e.kind == EVAL for e in events) or not any(e.kind == TRAINING for e in events):
                continue
            trained = {e.receiver for e in events if e.kind == CALL and e.receiver is not None}
            for i, ev in enumerate(events):
                if ev.kind == EVAL and ev.receiver in trained and not self._leaves_loop(ev.anchor, loop) \
                        and not self._switched_by_branch(ev.anchor) and self._trains_before_restore(events, i):
                    self.report(ev.anchor)

    def _switched_by_branch(self, node: cst.CSTNode) -> bool:
        """``if phase == "train": model.train() else: model.eval()``: the two branches are
        one per-pass choice of mode, not an eval() that follows a train()."""
        model = self.model
        # only a call inside an `if` around ``node`` can be in its other branch: look inside the outermost
        outermost = None
        for a in model.ancestors(node):
            if isinstance(a, (cst.If, cst.IfExp)):
                outermost = a
        if outermost is None:
            return False
        return any(mode == TRAIN and model.mutually_exclusive(node, call)
                   for _, call, mode in self._facts.mode_calls_within(outermost))

    @staticmethod
    def _trains_before_restore(events: list[ModeEvent], i: int) -> bool:
        receiver = events[i].receiver
        for ev in events[i + 1:] + events[:i]:
            if ev.kind == TRAIN and ev.receiver in (receiver, None):
                return False
            if ev.kind == TRAINING:
                return True
        return False

    def _leaves_loop(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """A ``break``/``return``/``raise`` follows ``node`` in one of its blocks inside ``loop``."""
        child = node
        for a in self.model.ancestors(node):
            if a is loop:
                return False
            if isinstance(a, cst.IndentedBlock):
                after = False
                for stmt in a.body:
                    if after and isinstance(stmt, cst.SimpleStatementLine) \
                            and any(isinstance(s, _EXITS) for s in stmt.body):
                        return True
                    after = after or stmt is child
            child = a
        return False
