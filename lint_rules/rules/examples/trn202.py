"""The examples of TRN202 (EmptyCacheInLoop): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # once per epoch, after the batch loop and evaluation
        import torch
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            evaluate(model)
            torch.cuda.empty_cache()
        """
    ),
    Valid(
        """
        # OOM recovery and a periodic flush
        import torch
        for step, (x, y) in enumerate(loader):
            try:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
            if step % 1000 == 0:
                torch.cuda.empty_cache()
        """
    ),
    Valid(
        """
        # a batch-size retry loop and an evaluation loop do not train
        import torch
        while batch_size:
            try:
                torch.cuda.empty_cache()
                return benchmark(batch_size)
            except RuntimeError:
                batch_size //= 2
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum()
                torch.cuda.empty_cache()
        """
    ),
    Valid(
        """
        # only under memory pressure
        import torch
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            if torch.cuda.memory_reserved() > budget:
                torch.cuda.empty_cache()
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            torch.cuda.empty_cache()  # BUG
        """
    ),
    Invalid(
        """
        from torch.cuda import empty_cache
        for epoch in range(epochs):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y) / accum
                loss.backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                empty_cache()  # BUG
        """
    ),
    Invalid(
        """
        # a step helper called from the batch loop
        import torch
        import torch.cuda as tc
        class Trainer:
            def _run_batch(self, x, y):
                self.optimizer.zero_grad()
                self.criterion(self.model(x), y).backward()
                self.optimizer.step()
                tc.empty_cache()  # BUG

            def run_epoch(self, loader):
                for x, y in loader:
                    self._run_batch(x, y)
        """
    ),
    Invalid(
        """
        import torch
        step = 0
        while step < max_steps:
            loss = model(next(batches))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if args.free_memory:
                torch.cuda.empty_cache()  # BUG
            step += 1
        """
    ),
]
