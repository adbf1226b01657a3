"""The examples of TRN107 (RetainGraphInTrainingLoop): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # backward over a graph handed in, repeated for profiling: every pass needs it
        import torch
        def profile_backward(f, count):
            for _ in range(count):
                f.backward(retain_graph=True)
        """
    ),
    Valid(
        """
        import torch
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        """
    ),
    Valid(
        """
        # two losses sharing one graph: the second backward needs it
        import torch
        for x, y in loader:
            optimizer.zero_grad()
            feats = encoder(x)
            loss_a = head_a(feats).mean()
            loss_b = head_b(feats).mean()
            loss_a.backward(retain_graph=True)
            loss_b.backward()
            optimizer.step()
        """
    ),
    Valid(
        """
        # GAN: D's loss is backpropagated with the graph kept for G's update
        import torch
        for real in loader:
            fake = gen(torch.randn(real.size(0), 64))
            opt_d.zero_grad()
            d_loss = criterion(disc(real), ones) + criterion(disc(fake), zeros)
            d_loss.backward(retain_graph=True)
            opt_d.step()
            opt_g.zero_grad()
            g_loss = criterion(disc(fake), ones)
            g_loss.backward()
            opt_g.step()
        """
    ),
    Valid(
        """
        # several backward passes over one graph, the last one frees it
        import torch
        for x in loader:
            opt.zero_grad()
            losses = model(x)
            for i, loss in enumerate(losses):
                loss.backward(retain_graph=i < len(losses) - 1)
            opt.step()
        """
    ),
    Valid(
        """
        # the graph of `features` is built once before the loop and reused every iteration
        import torch
        features = extractor(image)
        for step in range(300):
            opt.zero_grad()
            loss = ((features - target) ** 2).sum() + tv(canvas)
            loss.backward(retain_graph=True)
            opt.step()
        """
    ),
    Valid(
        """
        # gradient penalty: autograd.grad after the first backward uses the graph
        import torch
        for x in loader:
            opt.zero_grad()
            out = model(x)
            loss = out.mean()
            loss.backward(retain_graph=True)
            g, = torch.autograd.grad(out.sum(), x, create_graph=True)
            opt.step()
        """
    ),
    Valid(
        """
        # a helper called later in the iteration backpropagates through the same features
        import torch
        class Agent:
            def update_policy(self, state):
                self.pi_opt.zero_grad()
                (-self.value(state)).mean().backward()
                self.pi_opt.step()

            def learn(self, batches):
                for obs, target in batches:
                    state = self.encoder(obs)
                    self.v_opt.zero_grad()
                    loss = (self.value(state) - target).pow(2).mean()
                    loss.backward(retain_graph=True)
                    self.v_opt.step()
                    self.update_policy(state)
        """
    ),
]

INVALID = [
    Invalid(
        """
        # the RNN state carries the graph across iterations: detach it instead
        import torch
        hidden = model.init_hidden(batch_size)
        for x, y in loader:
            optimizer.zero_grad()
            output = model(x, hidden)
            hidden = output[1]
            loss = criterion(output[0], y)
            loss.backward(retain_graph=True)  # BUG
            optimizer.step()
        """
    ),
    Invalid(
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = criterion(model(x), y)
                scaler.scale(loss).backward(retain_graph=True)  # BUG
                scaler.step(optimizer)
                scaler.update()
        """
    ),
    Invalid(
        """
        import torch
        from torch import autograd
        class Trainer:
            def step(self, x, y):
                self.opt.zero_grad()
                loss = self.loss_fn(self.model(x), y)
                autograd.backward(loss, retain_graph=True)  # BUG
                self.opt.step()

            def fit(self, loader):
                for x, y in loader:
                    self.step(x, y)
        """
    ),
    Invalid(
        """
        # the second backward belongs to the previous statement's branch, not after it
        import torch
        while step < max_steps:
            x, y = next(batches)
            opt.zero_grad()
            loss = criterion(model(x), y)
            if use_aux:
                aux_loss(x).backward()
            loss.backward(retain_graph=True)  # BUG
            opt.step()
            step += 1
        """
    ),
]
