"""The examples of TRN102 (MissingZeroGrad): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # the gradients are reset two helpers deep, by a walk over every parameter
        import torch

        def apply_update(net, loss, opt):
            for w in net.parameters():
                w.grad = None
            loss.backward()
            opt.step()

        def one_batch(net, opt, batch):
            apply_update(net, net(batch).sum(), opt)

        def fit(net, opt, batches):
            for batch in batches:
                one_batch(net, opt, batch)
        """
    ),
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
