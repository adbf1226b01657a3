"""The examples of TRN106 (LossAccumulatedWithGraph): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        total_loss = 0.0
        losses = []
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            losses.append(loss.detach())
        """
    ),
    Valid(
        """
        # one iteration's loss built from parts; the total is reset every step
        import torch
        import torch.nn.functional as F
        for x, y in loader:
            optimizer.zero_grad()
            out, aux = model(x)
            loss = F.cross_entropy(out, y)
            loss = loss + 0.4 * F.cross_entropy(aux, y)
            loss += reg_weight * model.l2()
            step_losses = []
            step_losses.append(loss)
            loss.backward()
            optimizer.step()
        """
    ),
    Valid(
        """
        # evaluation under no_grad holds no graph
        import torch
        criterion = torch.nn.CrossEntropyLoss()
        val_loss = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                val_loss += criterion(model(x), y)
        for x, y in val_loader:
            with torch.no_grad():
                out = model(x)
            loss = criterion(out, y)
            val_loss += loss
        """
    ),
    Valid(
        """
        # the accumulated losses are backpropagated together: the graphs are needed
        import torch
        import torch.nn.functional as F
        for batch in loader:
            optimizer.zero_grad()
            losses = []
            total = 0
            for head in heads:
                out = head(batch.x)
                losses.append(F.mse_loss(out, batch.y))
                total = total + F.l1_loss(out, batch.y)
            (torch.stack(losses).sum() + total).backward()
            optimizer.step()
        """
    ),
    Valid(
        """
        # a loop inside forward, not across training iterations
        import torch
        import torch.nn.functional as F
        def multiscale_loss(preds, target):
            total = 0
            for p in preds:
                total += F.l1_loss(p, target)
            return total
        """
    ),
    Valid(
        """
        # the output's loss replaced by a detached copy before the output is kept
        import torch
        def train_epoch(module, loader, opt):
            history = []
            for batch in loader:
                opt.zero_grad()
                out = module.training_step(batch)
                out["loss"].backward()
                opt.step()
                out["loss"] = out["loss"].detach()
                history.append(out)
                stats = module.training_step(batch)
                stats = {k: v.item() for k, v in stats.items()}
                history.append(stats)
            return history
        """
    ),
]

INVALID = [
    Invalid(
        """
        # the step's output dict kept for the epoch, loss and graph included
        import torch
        def train_epoch(module, loader, opt):
            history = []
            for batch in loader:
                opt.zero_grad()
                out = module.training_step(batch)
                out["loss"].backward()
                opt.step()
                history.append(out)  # BUG
            return history
        """
    ),
    Invalid(
        """
        import torch
        criterion = torch.nn.CrossEntropyLoss()
        for epoch in range(epochs):
            running_loss = 0.0
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running_loss += loss  # BUG
        """
    ),
    Invalid(
        """
        import torch.nn.functional as F
        history = []
        epoch_loss = 0
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            optimizer.step()
            history.append(loss)  # BUG
            epoch_loss = epoch_loss + loss * x.size(0)  # BUG
        """
    ),
    Invalid(
        """
        import torch
        class Trainer:
            def train_step(self, x, y):
                self.optimizer.zero_grad()
                loss = self.model(x, y)
                loss.backward()
                self.optimizer.step()
                self.epoch_loss += loss  # BUG
                self.stats["loss"] += loss  # BUG

            def fit(self, loader):
                for x, y in loader:
                    self.train_step(x, y)
        """
    ),
    Invalid(
        """
        # an evaluation loop over a DataLoader without no_grad
        import torch
        from torch.utils.data import DataLoader
        val_loader = DataLoader(val_ds, batch_size=64)
        criterion = torch.nn.MSELoss()
        val_loss = 0.0
        for x, y in val_loader:
            val_loss += criterion(model(x), y)  # BUG
        """
    ),
]
