from __future__ import annotations

import libcst as cst

from lint_rules.analysis.kinds import OPTIMIZER
from lint_rules.analysis.summaries import Summaries
from lint_rules.analysis.training import ANY, BACKWARD, CLEAR, STEP
from lint_rules.rule import Invalid, Rule, Valid


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
    Helpers imported from another file are not followed. A `zero_grad()` in a
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

    VALID = [
        Valid(
            """
            # the same helpers, with the gradients cleared by a reset_grad() helper each step
            import torch
            class Solver:
                def reset_grad(self):
                    self.g_optimizer.zero_grad()
                def update(self, loss):
                    loss.backward()
                    self.g_optimizer.step()
                def train(self, loader):
                    for x, y in loader:
                        self.reset_grad()
                        self.update(criterion(self.g(x), y))
            """
        ),
        Valid(
            """
            # a helper that runs a whole epoch with its own zero_grad() in its loop
            import torch
            def train_epoch(model, optimizer, loader):
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
            for epoch in range(10):
                train_epoch(model, opt, loader)
            """
        ),
        Valid(
            """
            import torch
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                opt.zero_grad()
                criterion(model(x), y).backward()
                opt.step()
            """
        ),
        Valid(
            """
            # gradient accumulation with the clear after the conditional step
            import torch
            opt = torch.optim.AdamW(model.parameters())
            for i, (x, y) in enumerate(loader):
                (criterion(model(x), y) / 4).backward()
                if (i + 1) % 4 == 0:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            """
        ),
        Valid(
            """
            # nanoGPT-style micro-steps inside the step loop
            import torch
            optimizer = model.configure_optimizers(weight_decay, learning_rate)
            while True:
                for micro_step in range(accum):
                    scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
            """
        ),
        Valid(
            """
            # model.zero_grad() and p.grad = None clear every optimizer of the model
            import torch
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                model.zero_grad()
                criterion(model(x), y).backward()
                opt.step()
            for x, y in loader:
                criterion(model(x), y).backward()
                opt.step()
                for p in model.parameters():
                    p.grad = None
            """
        ),
        Valid(
            """
            # LBFGS: the closure clears the gradients
            import torch
            opt = torch.optim.LBFGS(model.parameters())
            for x, y in loader:
                def closure():
                    opt.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    return loss
                opt.step(closure)
            """
        ),
        Valid(
            """
            # a scheduler's step is not an optimizer step
            import torch
            for epoch in range(10):
                loss.backward()
                scheduler.step()
            """
        ),
        Valid(
            """
            # distributed autograd keeps gradients in a per-iteration context, not .grad
            import torch.distributed.autograd as dist_autograd
            from torch.distributed.optim import DistributedOptimizer
            opt = DistributedOptimizer(torch.optim.SGD, param_rrefs, lr=0.05)
            for data, target in loader:
                with dist_autograd.context() as context_id:
                    loss = criterion(model(data), target)
                    dist_autograd.backward(context_id, [loss])
                    opt.step(context_id)
            """
        ),
        Valid(
            """
            # a fresh optimizer every iteration (TRN203's concern, not this rule's)
            import torch
            for trial in range(3):
                model = make_model()
                opt = torch.optim.SGD(model.parameters(), lr=0.01)
                model(x).sum().backward()
                opt.step()
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            # zero_grad() once, before the loop; backward and step run in helpers
            import torch
            def update(loss, optimizer):
                loss.backward()
                optimizer.step()
            def train_step(model, optimizer, x, y):
                update(criterion(model(x), y), optimizer)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            opt.zero_grad()
            for x, y in loader:
                train_step(model, opt, x, y)  # BUG
            """
        ),
        Invalid(
            """
            import torch
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            opt.zero_grad()
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                opt.step()  # BUG
            """
        ),
        Invalid(
            """
            from torch import optim
            optimizer = optim.Adam(net.parameters())
            scaler = torch.amp.GradScaler()
            for epoch in range(10):
                optimizer.zero_grad()  # once per epoch only
                for x, y in loader:
                    scaler.scale(criterion(net(x), y)).backward()
                    scaler.step(optimizer)  # BUG
                    scaler.update()
            """
        ),
        Invalid(
            """
            import torch
            opt_g = torch.optim.Adam(gen.parameters())
            opt_d = torch.optim.Adam(disc.parameters())
            for real in loader:
                opt_d.zero_grad()
                d_loss(real).backward()
                opt_d.step()
                g_loss(real).backward()
                opt_g.step()  # BUG
            """
        ),
    ]

    def finish(self) -> None:
        facts = self.model.training
        helpers = self.model.fact(Summaries)
        direct = [ev for ev in facts.events if ev.kind == STEP]
        through_helpers = [ev for _, evs in helpers.helper_calls() for ev in evs if ev.kind == STEP]
        for ev in direct + through_helpers:
            loop = self._training_loop_of(ev, helpers)
            if loop is None or (ev in direct and self._built_in(ev, loop)):
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
        for ev in facts.events:
            if ev.kind == CLEAR and (ev.key == ANY or ev.key == key) \
                    and self.model.is_inside(ev.node, loop):
                return True
        # a helper's zero_grad() counts whatever it clears: its target's kind is out of sight
        return any(ev.kind == CLEAR for ev in helpers.helper_events(loop))
