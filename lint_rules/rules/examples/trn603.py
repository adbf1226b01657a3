"""The examples of TRN603 (TrainModeNotRestored): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

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
    Invalid(
        """
        # a trainer class: the test pass switches the model to eval mode and nothing switches it back
        import torch
        class Runner(BaseRunner):
            def test_pass(self, batches):
                self.model.eval()  # BUG
                with torch.no_grad():
                    return [self.model(x) for x in batches]
            def train_pass(self, batches):
                for x, y in batches:
                    self.opt.zero_grad()
                    self.model.loss(x, y).backward()
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                    self.opt.step()
        """
    ),
]
