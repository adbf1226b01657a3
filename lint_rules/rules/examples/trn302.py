"""The examples of TRN302 (DistributedSamplerWithoutSetEpoch): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # held-out data: its order changes no metric, whether spelled so or scored by a helper named so
        import torch
        from torch.utils.data import DataLoader, DistributedSampler

        def main(model, opt, train_set, holdout, extra):
            train_sampler = DistributedSampler(train_set)
            train_loader = DataLoader(train_set, sampler=train_sampler)
            val_sampler = DistributedSampler(holdout)
            val_loader = DataLoader(holdout, sampler=val_sampler)
            extra_loader = DataLoader(extra, sampler=DistributedSampler(extra))
            for epoch in range(10):
                train_sampler.set_epoch(epoch)
                for x, y in train_loader:
                    opt.zero_grad()
                    model(x).sum().backward()
                    opt.step()
                for x, y in val_loader:
                    with torch.no_grad():
                        model(x)
                validate_model(model, extra_loader)

        def validate_model(model, loader):
            model.eval()
            for x, y in loader:
                with torch.no_grad():
                    model(x)
        """
    ),
    Valid(
        """
        # set_epoch() through the loader a framework returns
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
        model, optimizer, train_dl = accelerator.prepare(model, optimizer, loader)
        for epoch in range(10):
            train_dl.sampler.set_epoch(epoch)
            for x in train_dl:
                step(x)
        """
    ),
    Valid(
        """
        # a helper of this file sets the epoch on the sampler it is given
        from torch.utils.data import DataLoader, DistributedSampler
        def start_epoch(s, epoch):
            s.set_epoch(epoch)
        def train(ds):
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            for epoch in range(10):
                start_epoch(sampler, epoch)
                for x in loader:
                    step(x)
        """
    ),
    Valid(
        """
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
        for epoch in range(10):
            sampler.set_epoch(epoch)
            for x, y in loader:
                step(x, y)
        """
    ),
    Valid(
        """
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        loader = DataLoader(ds, sampler=DistributedSampler(ds))
        for epoch in range(10):
            loader.sampler.set_epoch(epoch)
            train_one_epoch(model, loader)
        """
    ),
    Valid(
        """
        # a sampler that does not shuffle needs no epoch
        import torch
        sampler = torch.utils.data.DistributedSampler(val_ds, shuffle=False)
        loader = torch.utils.data.DataLoader(val_ds, sampler=sampler)
        for epoch in range(10):
            for x, y in loader:
                evaluate(x, y)
        """
    ),
    Valid(
        """
        # one pass over the data: no epoch loop
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
        for x, y in loader:
            step(x, y)
        """
    ),
    Valid(
        """
        # set_epoch inside the helper that runs each epoch
        from torch.utils.data import DataLoader, DistributedSampler
        def train_one_epoch(loader, epoch):
            loader.sampler.set_epoch(epoch)
            for batch in loader:
                step(batch)
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
        for epoch in range(3):
            train_one_epoch(loader, epoch)
        """
    ),
    Valid(
        """
        # a shuffled validation sampler: each epoch only evaluates with it
        from torch.utils.data import DataLoader, DistributedSampler
        from engine import evaluate, train_one_epoch
        train_loader = DataLoader(train_ds, sampler=DistributedSampler(train_ds))
        val_loader = DataLoader(val_ds, sampler=DistributedSampler(val_ds, shuffle=True))
        for epoch in range(epochs):
            train_loader.sampler.set_epoch(epoch)
            train_one_epoch(model, train_loader, optimizer)
            stats = evaluate(val_loader, model)
            best = max(best, stats["acc1"])
        """
    ),
    Valid(
        """
        # the held-out loader is read with autograd off
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        held_out = DataLoader(ds, sampler=DistributedSampler(ds))
        for epoch in range(epochs):
            fit(model)
            with torch.no_grad():
                for x, y in held_out:
                    score(model(x), y)
        """
    ),
    Valid(
        """
        # a wrapper given only the dataset builds its own loader and sampler
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)
        dl = DataLoader(ds, sampler=sampler)
        (engine, opt, distr_dl, sched) = backend.distribute(model=net, optimizer=opt, training_data=ds)
        for epoch in range(epochs):
            for text, images in distr_dl:
                engine.step(engine(text, images))
        """
    ),
    Valid(
        """
        # the fix: set_epoch() on the sampler behind the wrapped loader
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds) if distributed else None
        dl = DataLoader(ds, sampler=sampler)
        (engine, opt, distr_dl, sched) = backend.distribute(
            model=net, optimizer=opt, training_data=ds if deepspeed else dl)
        for epoch in range(epochs):
            if sampler:
                sampler.set_epoch(epoch)
            for text, images in distr_dl:
                engine.step(engine(text, images))
        """
    ),
    Valid(
        """
        # loaders in a dict handed to a trainer class: set_epoch() on the sampler it keeps
        from torch.utils.data import DataLoader, DistributedSampler
        class Trainer:
            def __init__(self, loaders, samplers):
                self.loaders, self.samplers = loaders, samplers
            def fit(self, epochs):
                for epoch in range(epochs):
                    self.samplers["train"].set_epoch(epoch)
                    for batch in self.loaders["train"]:
                        self.step(batch)
        samplers = {"train": DistributedSampler(train_ds)}
        loaders = {"train": DataLoader(train_ds, sampler=samplers["train"])}
        Trainer(loaders, samplers).fit(10)
        """
    ),
    Valid(
        """
        # only the "train" loader is read every epoch; the shuffled sampler feeds "extra"
        from torch.utils.data import DataLoader, DistributedSampler
        class Trainer:
            def __init__(self, loaders):
                self.loaders = loaders
            def fit(self, epochs):
                for epoch in range(epochs):
                    for batch in self.loaders["train"]:
                        self.step(batch)
        loaders = {"train": DataLoader(train_ds, shuffle=True),
                   "extra": DataLoader(extra_ds, sampler=DistributedSampler(extra_ds))}
        Trainer(loaders).fit(10)
        """
    ),
]

INVALID = [
    Invalid(
        """
        # a loader dict given to a trainer class whose per-epoch method iterates it
        from torch.utils.data import DataLoader, DistributedSampler
        class Trainer:
            def __init__(self, model, data_loader):
                self.model = model
                self.data_loader = data_loader
            def run(self):
                while not self.done:
                    self._train_epoch()
            def _train_epoch(self):
                for batch in self.data_loader["train"]:
                    self.step(batch)
        def main(ds):
            sampler = DistributedSampler(ds)  # BUG
            data_loader = {"train": DataLoader(ds, sampler=sampler)}
            Trainer(model=net, data_loader=data_loader).run()
        """
    ),
    Invalid(
        """
        # the loader comes back from a backend's wrapper, by keyword, under a new name
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds) if distributed else None  # BUG
        dl = DataLoader(ds, sampler=sampler)
        (engine, opt, distr_dl, sched) = backend.distribute(
            model=net, optimizer=opt, training_data=ds if deepspeed else dl)
        for epoch in range(epochs):
            for text, images in distr_dl:
                engine.step(engine(text, images))
        """
    ),
    Invalid(
        """
        # a helper that trains and then evaluates is no evaluation-only use
        from torch.utils.data import DataLoader, DistributedSampler
        from engine import train_and_evaluate
        loader = DataLoader(ds, sampler=DistributedSampler(ds))  # BUG
        for epoch in range(epochs):
            train_and_evaluate(model, loader, epoch)
        """
    ),
    Invalid(
        """
        # an imported helper named for evaluation but given the optimizer trains
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        from engine import evaluate
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(ds, sampler=DistributedSampler(ds))  # BUG
        for epoch in range(epochs):
            evaluate(loader, model, optimizer)
        """
    ),
    Invalid(
        """
        # set_epoch() on another function's sampler does not fix this one
        from torch.utils.data import DataLoader, DistributedSampler
        def train_a(ds):
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            for epoch in range(10):
                sampler.set_epoch(epoch)
                for x in loader:
                    step(x)
        def train_b(ds):
            sampler = DistributedSampler(ds)  # BUG
            loader = DataLoader(ds, sampler=sampler)
            for epoch in range(10):
                for x in loader:
                    step(x)
        """
    ),
    Invalid(
        """
        # the helper's loader.sampler.set_epoch() is called for another loader only
        from torch.utils.data import DataLoader, DistributedSampler
        def run_epoch(loader, epoch):
            loader.sampler.set_epoch(epoch)
            for x in loader:
                step(x)
        def train(ds, other_ds):
            sampler = DistributedSampler(ds)  # BUG
            loader = DataLoader(ds, sampler=sampler)
            other = DataLoader(other_ds, sampler=DistributedSampler(other_ds))
            for epoch in range(10):
                run_epoch(other, epoch)
                for x in loader:
                    step(x)
        """
    ),
    Invalid(
        """
        # the loader a framework returns is still fed by the same sampler
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)  # BUG
        loader = DataLoader(ds, sampler=sampler)
        model, optimizer, train_dl = accelerator.prepare(model, optimizer, loader)
        for epoch in range(10):
            for x in train_dl:
                step(x)
        """
    ),
    Invalid(
        """
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)  # BUG
        loader = DataLoader(ds, batch_size=32, sampler=sampler)
        for epoch in range(10):
            for x, y in loader:
                step(x, y)
        """
    ),
    Invalid(
        """
        import torch.utils.data as tud
        loader = tud.DataLoader(ds, sampler=tud.distributed.DistributedSampler(ds, shuffle=True))  # BUG
        for epoch in range(epochs):
            train_one_epoch(model, loader, epoch)
        """
    ),
    Invalid(
        """
        from torch.utils.data import DataLoader, DistributedSampler
        def main(args):
            train_sampler = DistributedSampler(train_ds) if args.distributed else None  # BUG
            train_loader = DataLoader(train_ds, shuffle=(train_sampler is None), sampler=train_sampler)
            epoch = 0
            while epoch < args.epochs:
                for i, batch in enumerate(train_loader):
                    step(batch)
                epoch += 1
        """
    ),
]
