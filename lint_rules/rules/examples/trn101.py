"""The examples of TRN101 (ZeroGradBetweenBackwardAndStep): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # the prototypes stay frozen for the first iterations: their gradients, and only theirs, are dropped
        def train(model, loader, criterion, optimizer, freeze_iters):
            for it, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                if it < freeze_iters:
                    for name, p in model.named_parameters():
                        if "prototypes" in name:
                            p.grad = None
                optimizer.step()
        """
    ),
    Valid(
        """
        # the reset_grad() helper before backward(): the right order
        import torch
        class Solver:
            def reset_grad(self):
                self.optimizer.zero_grad()
            def train(self, loader):
                for x, y in loader:
                    self.reset_grad()
                    self.criterion(self.net(x), y).backward()
                    self.optimizer.step()
        """
    ),
    Valid(
        """
        # a helper that runs a whole step in the right order, after a clear of the caller
        import torch
        def train_step(model, optimizer, x, y):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            train_step(model, opt, x, y)
            opt.zero_grad()
        """
    ),
    Valid(
        """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
        """
    ),
    Valid(
        """
        # zero_grad after step
        import torch
        opt = torch.optim.Adam(model.parameters())
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        """
    ),
    Valid(
        """
        # gradient accumulation: clear after the conditional step
        import torch
        opt = torch.optim.AdamW(model.parameters())
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0:
                opt.step()
                opt.zero_grad()
        """
    ),
    Valid(
        """
        # GAN: D is cleared after G's backward but before D's own backward
        import torch
        opt_g = torch.optim.Adam(gen.parameters())
        opt_d = torch.optim.Adam(disc.parameters())
        for real in loader:
            opt_g.zero_grad()
            g_loss = -disc(gen(z)).mean()
            g_loss.backward()
            opt_g.step()
            opt_d.zero_grad()
            d_loss = disc(gen(z).detach()).mean() - disc(real).mean()
            d_loss.backward()
            opt_d.step()
        """
    ),
    Valid(
        """
        # AMP with a GradScaler
        import torch
        scaler = torch.amp.GradScaler("cuda")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        """
    ),
    Valid(
        """
        # clearing another optimizer's gradients does not affect this step
        import torch
        opt_a = torch.optim.SGD(a.parameters(), lr=0.1)
        opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
        for x in loader:
            opt_a.zero_grad()
            opt_b.zero_grad()
            loss_a(x).backward()
            opt_b.zero_grad()
            opt_a.step()
        """
    ),
    Valid(
        """
        # accumulation: the window is opened by a conditional clear before backward()
        import torch
        opt = torch.optim.AdamW(model.parameters())
        for i, (x, y) in enumerate(loader):
            if i % accum == 0:
                opt.zero_grad(set_to_none=True)
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                opt.step()
        """
    ),
    Valid(
        """
        # WGAN: the generator steps every n critic steps with its own backward() in the if
        import torch
        opt_d = torch.optim.RMSprop(disc.parameters())
        opt_g = torch.optim.RMSprop(gen.parameters())
        for i, real in enumerate(loader):
            opt_d.zero_grad()
            opt_g.zero_grad()
            (disc(gen(z).detach()).mean() - disc(real).mean()).backward()
            opt_d.step()
            if i % n_critic == 0:
                (-disc(gen(z)).mean()).backward()
                opt_g.step()
        """
    ),
    Valid(
        """
        # a step skipped on a non-finite loss is not accumulation: clearing each batch is right
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            if torch.isfinite(loss):
                opt.step()
        """
    ),
    Valid(
        """
        # Lightning manual optimisation: clear inside the accumulation if, after the step
        import lightning.pytorch as pl
        class Task(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                self.manual_backward(self.loss(batch) / self.accumulate)
                if (batch_idx + 1) % self.accumulate == 0:
                    opt.step()
                    opt.zero_grad()
        """
    ),
]

INVALID = [
    Invalid(
        """
        # a same-file reset_grad() helper called between backward() and step()
        import torch
        class Solver:
            def reset_grad(self):
                self.optimizer.zero_grad()
            def train(self, loader):
                for x, y in loader:
                    self.criterion(self.net(x), y).backward()
                    self.reset_grad()  # BUG
                    self.optimizer.step()
        """
    ),
    Invalid(
        """
        # backward() and step() one helper call deep, zero_grad() between the calls
        import torch
        def compute(model, x, y):
            criterion(model(x), y).backward()
        def apply(optimizer):
            optimizer.step()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            compute(model, x, y)
            opt.zero_grad()  # BUG
            apply(opt)
        """
    ),
    Invalid(
        """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            opt.zero_grad()  # BUG
            opt.step()
        """
    ),
    Invalid(
        """
        import torch.optim as optim
        optimizer = optim.Adam(model.parameters())
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            model.zero_grad()  # BUG
            optimizer.step()
        """
    ),
    Invalid(
        """
        import torch
        def train_step(model, optimizer, scaler, x, y):
            with torch.autocast("cuda"):
                loss = model(x, y)
            scaler.scale(loss).backward()
            optimizer.zero_grad(set_to_none=True)  # BUG
            scaler.step(optimizer)
            scaler.update()
        """
    ),
    Invalid(
        """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.step()
            loss = criterion(model(x), y)
            loss.backward()
            for p in model.parameters():
                p.grad = None  # BUG
        """
    ),
    Invalid(
        """
        # accumulation: the clear every micro-batch wipes what the step should sum
        import torch
        opt = torch.optim.AdamW(model.parameters())
        for i, (x, y) in enumerate(loader):
            opt.zero_grad()  # BUG
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                opt.step()
        """
    ),
    Invalid(
        """
        # Lightning manual optimisation: training_step runs once per micro-batch
        import lightning.pytorch as pl
        class Task(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                opt.zero_grad()  # BUG
                self.manual_backward(self.loss(batch) / self.accumulate_grad_batches)
                if (batch_idx + 1) % self.accumulate_grad_batches == 0:
                    opt.step()
        """
    ),
    Invalid(
        """
        # accumulation: the clear after the conditional step, outside its if
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step, batch in enumerate(loader):
            model(batch).loss.backward()
            if step % grad_accum_steps == 0:
                opt.step()
            opt.zero_grad(set_to_none=True)  # BUG
        """
    ),
]
