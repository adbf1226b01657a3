"""The examples of TRN201 (HostDeviceSyncInTrainingLoop): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            if step % log_every == 0:
                print(f"step {step}: {loss.item():.4f}")
        """
    ),
    Valid(
        """
        # evaluation loop, and a sync after the training loop
        import torch
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        print(loss.item())
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        """
    ),
    Valid(
        """
        # once per epoch, and the first step only
        import torch
        for epoch in range(epochs):
            for i, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                if i == 0:
                    first = loss.item()
            print(epoch, loss.item())
        """
    ),
    Valid(
        """
        # int()/float() of plain Python values are not syncs
        import torch
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            lr = float(args.lr) * int(world_size)
            model.cpu() if args.offload else None
        """
    ),
    Valid(
        """
        # the first few steps only, and a step helper nobody calls in a loop
        import torch
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            if i < num_debug_steps:
                print(loss.item())

        def test_one_step():
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            assert loss.item() > 0
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
            running_loss += loss.item()  # BUG
        """
    ),
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        for x, y in loader:
            out = model(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            acc = (out.argmax(1) == y).float().mean().cpu().numpy()  # BUG
            history.append(float(loss))  # BUG
        """
    ),
    Invalid(
        """
        import torch
        while step < max_steps:
            loss = model(next(batches))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if loss.item() > 1e4:  # BUG
                raise RuntimeError("diverged")
            print(loss)  # BUG
            step += 1
        """
    ),
    Invalid(
        """
        # the accumulation boundary runs every optimizer step: not a logging interval
        import torch
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
                losses.append(loss.item())  # BUG
        """
    ),
    Invalid(
        """
        # a step helper called from the batch loop, and an LBFGS closure
        import torch
        class Trainer:
            def _run_batch(self, x, y):
                self.optimizer.zero_grad()
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                return loss.item()  # BUG

            def run_epoch(self, loader):
                for i, (x, y) in enumerate(loader):
                    loss = self._run_batch(x, y)
                    if i % 100 == 0:
                        print(loss)

        for x, y in loader:
            def closure():
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                print("loss:", loss.item())  # BUG
                loss.backward()
                return loss
            optimizer.step(closure)
        """
    ),
    Invalid(
        """
        # one sync per element of the batch, every step
        import torch
        for images, labels in loader:
            optimizer.zero_grad()
            logits = net(images)
            criterion(logits, labels).backward()
            optimizer.step()
            for row, label in zip(logits, labels):
                hits += int(row.argmax().item() == label)  # BUG
        """
    ),
    Invalid(
        """
        # a gradient norm read parameter by parameter: one sync per parameter, every step
        import torch
        def fit(net, batches, opt, loss_of, limit):
            for inputs, targets in batches:
                opt.zero_grad()
                loss_of(net(inputs), targets).backward()
                norm = 0.0
                weights = [w for w in net.parameters() if w.grad is not None]
                for w in weights:
                    norm += w.grad.norm().item() ** 2  # BUG
                if norm ** 0.5 < limit:
                    opt.step()
        """
    ),
]
