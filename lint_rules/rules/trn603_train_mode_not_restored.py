from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.evaluation import EVAL, TRAIN, FileFacts
from lint_rules.analysis.mode_flow import CALL, TRAINING, ModeEvent, ModeFlow
from lint_rules.analysis.training import BACKWARD, STEP
from lint_rules.rule import WARNING, Invalid, Rule, Valid

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

_EXITS = (cst.Break, cst.Return, cst.Raise)


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

    VALID = [
        Valid(
            """
            # one if/else picks the mode on every pass: not an eval() after a train()
            import torch
            def run(model, loader, opt):
                for epoch in range(3):
                    for phase in ("train", "val"):
                        if phase == "train":
                            model.train()
                        else:
                            model.eval()
                        for x, y in loader:
                            loss = crit(model(x), y)
                            if phase == "train":
                                opt.zero_grad()
                                loss.backward()
                                opt.step()
            """
        ),
        Valid(
            """
            # the helper's constant argument picks train() at the top of every epoch
            import torch
            def set_mode(model, mode):
                if mode == "train":
                    model.train()
                else:
                    model.eval()
            def fit(model, loader, opt):
                for epoch in range(3):
                    set_mode(model, "train")
                    for x, y in loader:
                        loss = crit(model(x), y)
                        loss.backward()
                        opt.step()
                    set_mode(model, "eval")
                    evaluate(model)
            """
        ),
        Valid(
            """
            import torch
            for epoch in range(epochs):
                model.train()
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                model.eval()
                with torch.no_grad():
                    for x, y in val_loader:
                        val_loss = criterion(model(x), y)
            """
        ),
        Valid(
            """
            # mnist-style: train() starts with model.train(), test() calls model.eval()
            import torch

            def train(model, loader, optimizer):
                model.train()
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()

            def test(model, loader):
                model.eval()
                with torch.no_grad():
                    for x, y in loader:
                        out = model(x)

            for epoch in range(1, epochs + 1):
                train(model, train_loader, optimizer)
                test(model, test_loader)
            """
        ),
        Valid(
            """
            # the evaluation restores the mode itself (nanoGPT-style)
            import torch

            @torch.no_grad()
            def estimate_loss():
                model.eval()
                for k in range(eval_iters):
                    X, Y = get_batch("val")
                    logits, loss = model(X, Y)
                model.train()

            while True:
                if iter_num % eval_interval == 0:
                    losses = estimate_loss()
                X, Y = get_batch("train")
                logits, loss = model(X, Y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                iter_num += 1
            """
        ),
        Valid(
            """
            # only the EMA copy is put in eval mode; it is never trained
            import torch
            for epoch in range(epochs):
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                    ema.update(model)
                ema_model.eval()
                with torch.no_grad():
                    for x, y in val_loader:
                        out = ema_model(x)
            """
        ),
        Valid(
            """
            # batch-norm layers frozen on purpose after model.train()
            import torch
            from torch import nn
            for epoch in range(epochs):
                model.train()
                for m in model.modules():
                    if isinstance(m, nn.BatchNorm2d):
                        m.eval()
                model.backbone.stem.eval()
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
            """
        ),
        Valid(
            """
            # the final evaluation leaves the loop
            import torch
            while True:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
                step += 1
                if step >= max_steps:
                    model.eval()
                    final = model(x_val)
                    break
            """
        ),
        Valid(
            """
            # an EMA copy evaluated through the same loss helper under no_grad: not the trained model
            import torch
            from losses import dsm_loss
            def train(net, ema_net, opt, loader, test_x):
                net.train()
                for step, x in enumerate(loader):
                    loss = dsm_loss(net, x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    if step % 100 == 0:
                        ema_net.eval()
                        with torch.no_grad():
                            print(dsm_loss(ema_net, test_x).item())
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            # the model is only handed to loss functions: a local helper, and an imported one
            import torch
            from losses import dsm_loss
            def denoising_loss(net, x):
                noise = torch.randn_like(x)
                return ((net(x + noise) + noise) ** 2).mean()

            def train(net, opt, loader, test_x):
                net.train()
                for step, x in enumerate(loader):
                    loss = denoising_loss(net, x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    if step % 100 == 0:
                        net.eval()  # BUG
                        with torch.no_grad():
                            print(denoising_loss(net, test_x).item())

            def train_imported(net_cls, opt, loader, test_x):
                score = torch.nn.DataParallel(net_cls())
                score.train()
                for step, x in enumerate(loader):
                    loss = dsm_loss(score, x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    if step % 100 == 0:
                        score.eval()  # BUG
                        with torch.no_grad():
                            print(dsm_loss(score, test_x).item())
            """
        ),
        Invalid(
            """
            # the helper's constant argument picks eval(); train() is only set once, before
            import torch
            def set_mode(model, mode):
                if mode == "train":
                    model.train()
                else:
                    model.eval()
            def fit(model, loader, opt):
                set_mode(model, "train")
                for epoch in range(3):
                    for x, y in loader:
                        loss = crit(model(x), y)
                        loss.backward()
                        opt.step()
                    set_mode(model, "eval")  # BUG
                    evaluate(model)
            """
        ),
        Invalid(
            """
            import torch
            for epoch in range(epochs):
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                model.eval()  # BUG
                with torch.no_grad():
                    for x, y in val_loader:
                        val_loss = criterion(model(x), y)
            """
        ),
        Invalid(
            """
            # test() leaves the model in eval mode and train() never switches back
            import torch

            def train(net, loader, opt):
                for x, y in loader:
                    opt.zero_grad()
                    criterion(net(x), y).backward()
                    opt.step()

            def test(net, loader):
                net.eval()
                with torch.no_grad():
                    for x, y in loader:
                        out = net(x)

            for epoch in range(epochs):
                train(model, train_loader, optimizer)
                test(model, test_loader)  # BUG
            """
        ),
        Invalid(
            """
            # a periodic evaluation inside the step loop, in a trainer class
            import torch
            class Trainer:
                def evaluate(self):
                    self.model.train(False)
                    with torch.no_grad():
                        for x, y in self.val_loader:
                            out = self.model(x)

                def fit(self):
                    self.model.train()
                    for step, (x, y) in enumerate(self.train_loader):
                        self.optimizer.zero_grad()
                        self.criterion(self.model(x), y).backward()
                        self.optimizer.step()
                        if step % 500 == 0:
                            self.evaluate()  # BUG
            """
        ),
    ]

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
        return any(mode == TRAIN and model.mutually_exclusive(node, call)
                   for _, call, mode in self._facts.mode_calls())

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
