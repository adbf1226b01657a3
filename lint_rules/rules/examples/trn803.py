"""The examples of TRN803 (GradientClippingBeforeUnscale): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            optimizer.zero_grad()
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        """
    ),
    Valid(
        """
        # AMP and full-precision branches, each in the right order
        import torch
        from torch.nn.utils import clip_grad_norm_
        def step(self, loss):
            if self.use_amp:
                self.scaler.scale(loss).backward()
                self.scaler.unscale_(self.optimizer)
                clip_grad_norm_(self.model.parameters(), self.max_norm)
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                loss.backward()
                clip_grad_norm_(self.model.parameters(), self.max_norm)
                self.optimizer.step()
        """
    ),
    Valid(
        """
        # gradient accumulation: unscale once, on the boundary, before clipping
        import torch
        for i, (x, y) in enumerate(loader):
            with torch.autocast("cuda"):
                loss = criterion(model(x), y) / accum
            scaler.scale(loss).backward()
            if (i + 1) % accum == 0:
                if max_norm is not None:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        """
    ),
    Valid(
        """
        # no scaler: nothing to unscale
        import torch
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            optimizer.zero_grad()
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # BUG
            scaler.step(optimizer)
            scaler.update()
        """
    ),
    Invalid(
        """
        # the AMP branch forgets unscale_; the full-precision branch is fine
        import torch
        class Trainer:
            def _run_batch(self, source, targets):
                _, loss = self.model(source, targets)
                self.optimizer.zero_grad(set_to_none=True)
                if self.config.use_amp:
                    self.scaler.scale(loss).backward()
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip)  # BUG
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip)
                    self.optimizer.step()
        """
    ),
    Invalid(
        """
        # a scaled loss kept in a variable, value clipping through an alias
        from torch.amp import GradScaler
        from torch.nn.utils import clip_grad_value_ as clip
        grad_scaler = GradScaler("cuda")
        def train_step(model, optimizer, loss):
            scaled = grad_scaler.scale(loss)
            scaled.backward()
            clip(model.parameters(), 0.5)  # BUG
            grad_scaler.step(optimizer)
            grad_scaler.update()
        """
    ),
    Invalid(
        """
        # accumulated scaled gradients, unscaled only after the clip
        import torch
        for micro in range(accum):
            scaler.scale(model(next(batches)) / accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # BUG
        scaler.step(optimizer)
        scaler.update()
        scaler.unscale_(optimizer)
        """
    ),
]
