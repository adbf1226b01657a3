"""The examples of TRN203 (OptimizerCreatedInLoop): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # an ensemble: each member is new, kept in a list, and gets its own optimizer
        import torch
        from torch import nn

        def fit_ensemble(loader, n_members):
            members = []
            for k in range(n_members):
                members.append(nn.Linear(4, 1))
                opt = torch.optim.Adam(members[-1].parameters(), lr=1e-3)
                for epoch in range(3):
                    for x, y in loader:
                        opt.zero_grad()
                        nn.functional.mse_loss(members[-1](x), y).backward()
                        opt.step()
            return members
        """
    ),
    Valid(
        """
        import torch
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """
    ),
    Valid(
        """
        # a hyper-parameter sweep and a cross-validation loop build a fresh model
        import torch
        for lr in (1e-2, 1e-3):
            model = Net()
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
            for epoch in range(epochs):
                for x, y in loader:
                    opt.zero_grad()
                    criterion(model(x), y).backward()
                    opt.step()
        class CrossValidation:
            def run(self, folds):
                for fold, loader in enumerate(folds):
                    self.model = build_model(self.cfg)
                    params = [p for p in self.model.parameters() if p.requires_grad]
                    optimizer = torch.optim.AdamW(params)
                    for x, y in loader:
                        optimizer.zero_grad()
                        criterion(self.model(x), y).backward()
                        optimizer.step()
        """
    ),
    Valid(
        """
        # one optimizer per ensemble member; a switch at a fixed epoch
        import torch
        for member in ensemble:
            opt = torch.optim.Adam(member.parameters())
            for x, y in loader:
                opt.zero_grad()
                criterion(member(x), y).backward()
                opt.step()
        optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(epochs):
            if epoch == switch_epoch:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """
    ),
    Valid(
        """
        # gradual unfreezing: each stage trains a different parameter set
        import torch
        for stage in stages:
            for p in stage.modules.parameters():
                p.requires_grad = True
            optimizer = torch.optim.AdamW(
                [p for p in model.parameters() if p.requires_grad], lr=stage.lr)
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """
    ),
    Valid(
        """
        # plain SGD keeps no state between steps
        import torch
        for i in range(num_iterations):
            loss = model(x).sum()
            loss.backward()
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            opt.step()
        """
    ),
    Valid(
        """
        # lazily built once, and a loop that only runs trials through a helper
        import torch
        optimizer = None
        for x, y in loader:
            if optimizer is None:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        for trial in range(trials):
            opt = torch.optim.Adam(model.parameters(), lr=sample_lr())
            results.append(run_trial(model, opt))
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        for epoch in range(epochs):
            optimizer = torch.optim.Adam(model.parameters(), lr=lr_at(epoch))  # BUG
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """
    ),
    Invalid(
        """
        from torch import optim
        for x, y in loader:
            opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)  # BUG
            opt.zero_grad()
            loss = criterion(net(x), y)
            loss.backward()
            opt.step()
        """
    ),
    Invalid(
        """
        # the sweep keeps training the same model, and the parameter list is rebuilt
        import torch
        from torch.optim import AdamW as Opt
        class Trainer:
            def fit(self, loader):
                for epoch in range(self.epochs):
                    params = [p for p in self.model.parameters() if p.requires_grad]
                    self.optimizer = Opt(params, lr=self.lr)  # BUG
                    for x, y in loader:
                        self.optimizer.zero_grad()
                        self.criterion(self.model(x), y).backward()
                        self.optimizer.step()
        """
    ),
    Invalid(
        """
        import torch
        step = 0
        while step < max_steps:
            optimizer = model.configure_optimizers(weight_decay, lr)  # BUG
            loss = model(next(batches))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
        """
    ),
    Invalid(
        """
        # a call of a subscript or of a call before the optimizer (its callee has no name)
        import torch
        for x, y in loader:
            hooks[0](model)
            make_callback()(x)
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # BUG
            opt.zero_grad()
            criterion(model(x), y).backward()
            opt.step()
        """
    ),
]
