"""The examples of TRN801 (SchedulerStepBeforeOptimizerStep): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # the schedule is placed on purpose: decay only from a given epoch on, or built at the resumed epoch
        import torch

        def fit(model, loader, criterion, start_epoch, epochs, decay_from):
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            decay = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
            steps = torch.optim.lr_scheduler.MultiStepLR(opt, [30, 60], last_epoch=start_epoch - 1)
            for epoch in range(start_epoch, epochs):
                steps.step()
                if epoch > decay_from:
                    decay.step()
                for x, y in loader:
                    opt.zero_grad()
                    criterion(model(x), y).backward()
                    opt.step()
        """
    ),
    Valid(
        """
        import torch
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=n)
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            scheduler.step()
        """
    ),
    Valid(
        """
        # an epoch-level scheduler after the batch loop, and a plateau scheduler
        import torch
        from torch.optim.lr_scheduler import StepLR, ReduceLROnPlateau
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = StepLR(optimizer, step_size=30)
        plateau = ReduceLROnPlateau(optimizer)
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            scheduler.step()
        for epoch in range(epochs):
            plateau.step(val_loss)
            train_one_epoch(model, loader, optimizer)
        """
    ),
    Valid(
        """
        # the epoch is passed explicitly, and the steps sit in different branches
        import torch
        for epoch in range(start_epoch, epochs):
            lr_scheduler.step(epoch)
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        for i, (x, y) in enumerate(loader):
            if i < warmup:
                warmup_scheduler.step()
            else:
                optimizer.step()
        """
    ),
    Valid(
        """
        # gradient accumulation: both steps on the boundary, in order
        import torch
        for i, (x, y) in enumerate(loader):
            scaler.scale(criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                optimizer.zero_grad()
        """
    ),
    Valid(
        """
        # one implementation of the template method does not train: the call may step nothing
        import torch
        class Loop:
            def __init__(self, model):
                self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=30)
            def fit(self, epochs):
                for epoch in range(epochs):
                    self.scheduler.step()
                    self.one_epoch()
        class Trains(Loop):
            def one_epoch(self):
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    criterion(self.model(x), y).backward()
                    self.optimizer.step()
        class Frozen(Loop):
            def one_epoch(self):
                for x, y in self.loader:
                    self.metrics.update(self.model(x), y)
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, s / 1000))
        for x, y in loader:
            scheduler.step()  # BUG
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        """
    ),
    Invalid(
        """
        # the pre-1.1 epoch idiom, with the batch loop in a helper
        import torch
        from torch.optim import lr_scheduler

        def train_one_epoch(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()

        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = lr_scheduler.StepLR(optimizer, step_size=30)
        for epoch in range(90):
            sched.step()  # BUG
            train_one_epoch(model, loader, optimizer)
        """
    ),
    Invalid(
        """
        import torch
        class Trainer:
            def training_step(self, batch):
                self.lr_scheduler.step()  # BUG
                loss = self.model(batch)
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
        """
    ),
    Invalid(
        """
        # an epoch-level scheduler stepped before the inner training loop
        import torch
        optimizer = torch.optim.AdamW(model.parameters())
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        for epoch in range(epochs):
            scheduler.step()  # BUG
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """
    ),
    Invalid(
        """
        # the epoch loop of a base class calls _train_epoch(), which every subclass implements
        # with an optimizer step: the scheduler steps first, whichever subclass runs
        import torch
        class BaseTrainer:
            def __init__(self, model):
                self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                self.scheduler = torch.optim.lr_scheduler.ExponentialLR(self.optimizer, 0.99)
            def train(self, epochs):
                for epoch in range(epochs):
                    self.scheduler.step()  # BUG
                    self._train_epoch(epoch)
        class PairTrainer(BaseTrainer):
            def _train_epoch(self, epoch):
                for a, b in self.loader:
                    self.optimizer.zero_grad()
                    self.pair_loss(a, b).backward()
                    self.optimizer.step()
        class TripletTrainer(PairTrainer):
            def _train_epoch(self, epoch):
                for a, p, n in self.loader:
                    self.optimizer.zero_grad()
                    self.triplet_loss(a, p, n).backward()
                    self.optimizer.step()
        """
    ),
]
