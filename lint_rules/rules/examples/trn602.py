"""The examples of TRN602 (EvaluationWithoutEvalMode): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # the same validation pass after net.eval(), and train() back for the next epoch
        import torch
        def fit_one_epoch(net, crit, optimizer, gen, gen_holdout):
            for it, batch in enumerate(gen):
                optimizer.zero_grad()
                crit(net(batch[0]), batch[1]).backward()
                optimizer.step()
            net.eval()
            for it, batch in enumerate(gen_holdout):
                with torch.no_grad():
                    optimizer.zero_grad()
                    held_loss = crit(net(batch[0]), batch[1])
            net.train()
        net = Detector().train()
        fit_one_epoch(net, crit, optimizer, gen, gen_holdout)
        """
    ),
    Valid(
        """
        # from_pretrained() hands the model back in eval mode
        import torch
        from transformers import AutoModelForSequenceClassification
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased").to("cuda")
        with torch.no_grad():
            for batch in val_loader:
                preds.append(model(**batch).logits.argmax(-1))
        """
    ),
    Valid(
        """
        # the same helper, after model.eval()
        import torch
        class Runner:
            def eval_step(self, batch):
                x, y = batch
                return (self.model(x).argmax(1) == y).float().mean()
            @torch.no_grad()
            def validate(self, val_loader):
                self.model.eval()
                for batch in val_loader:
                    self.eval_step(batch)
        """
    ),
    Valid(
        """
        # no layer of this MLP depends on the mode: eval() would change nothing
        import torch
        import torch.nn as nn
        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
            def forward(self, x):
                return self.body(x)
        def evaluate(loader):
            model = MLP()
            with torch.no_grad():
                for x, y in loader:
                    out = model(x)
        """
    ),
    Valid(
        """
        # a bare nn.Linear
        import torch
        model = torch.nn.Linear(4, 2)
        with torch.no_grad():
            for x, y in test_loader:
                out = model(x)
        """
    ),
    Valid(
        """
        # a loader helper returns the model in eval mode
        import torch
        def load_model(path):
            m = Net()
            m.load_state_dict(torch.load(path))
            return m.cuda().eval()
        model = load_model("best.pt")
        with torch.no_grad():
            for x, y in test_loader:
                out = model(x)
        """
    ),
    Valid(
        """
        # the mode set on the loop variable of an outer loop, through a device move
        import torch
        def check_all(models, loader):
            for model in models:
                model.cuda().eval()
                for x, y in loader:
                    acc = model(x)
        """
    ),
    Valid(
        """
        import torch
        def test(model, device, test_loader):
            model.eval()
            with torch.no_grad():
                for data, target in test_loader:
                    output = model(data.to(device))
        """
    ),
    Valid(
        """
        # the caller sets eval mode before calling the evaluation function
        import torch
        @torch.no_grad()
        def run_validate(model, loader):
            for x, y in loader:
                out = model(x)

        def validate(model, val_loader):
            model.eval()
            run_validate(model, val_loader)
        """
    ),
    Valid(
        """
        # the training loop, and a deliberate train-mode pass that re-estimates
        # batch-norm statistics
        import torch
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.train()
        with torch.no_grad():
            for x, _ in calib_loader:
                model(x)
        """
    ),
    Valid(
        """
        # eval mode set by a helper of this file, and model.train(False)
        import torch
        def freeze(model):
            model.eval()
            for p in model.parameters():
                p.requires_grad_(False)

        freeze(model)
        with torch.no_grad():
            for x in test_loader:
                preds = model(x)

        def evaluate(net, val_data):
            net.train(False)
            with torch.no_grad():
                for x, y in val_data:
                    out = net(x)
        """
    ),
    Valid(
        """
        # a test batch drawn inside the training loop, evaluated in eval mode
        import torch
        import torch.nn.functional as F
        def fit(net, opt, train_loader, test_loader, epochs):
            for epoch in range(epochs):
                for i, (x, y) in enumerate(train_loader):
                    net.train()
                    opt.zero_grad()
                    F.nll_loss(net(x), y).backward()
                    opt.step()
                    if i % 10 == 0:
                        tx, ty = next(iter(test_loader))
                        net.eval()
                        with torch.no_grad():
                            print((net(tx).argmax(1) == ty).float().mean().item())
        """
    ),
    Valid(
        """
        # a second, unlabelled training batch drawn in the loop: backward() follows it
        import torch
        def fit(net, opt, train_loader, unlabelled_loader):
            for x, y in train_loader:
                ux = next(iter(unlabelled_loader))
                opt.zero_grad()
                (criterion(net(x), y) + consistency(net(ux))).backward()
                opt.step()
        """
    ),
    Valid(
        """
        # a validation batch whose loss a helper backpropagates: a training step
        import torch
        class MetaLearner:
            def outer_step(self, loss):
                self.meta_opt.zero_grad()
                loss.backward()
                self.meta_opt.step()
            def fit(self, train_loader, val_loader):
                for x, y in train_loader:
                    self.opt.zero_grad()
                    criterion(self.model(x), y).backward()
                    self.opt.step()
                    vx, vy = next(iter(val_loader))
                    self.outer_step(criterion(self.model(vx), vy))
        """
    ),
    Valid(
        """
        # a validation batch that trains (a meta-learning outer step), not a measurement
        import torch
        def fit(model, meta_opt, train_loader, val_loader):
            val_iter = iter(val_loader)
            for x, y in train_loader:
                vx, vy = next(val_iter)
                meta_opt.zero_grad()
                criterion(model(vx), vy).backward()
                meta_opt.step()
        """
    ),
    Valid(
        """
        # the fix: eval() before the held-out batch, train() at the top of the step
        import torch
        from torch.autograd import Variable
        from pointnet import PointNetCls
        classifier = PointNetCls(k=16)
        optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01)
        for epoch in range(25):
            for i, (points, target) in enumerate(dataloader, 0):
                classifier = classifier.train()
                optimizer.zero_grad()
                F.nll_loss(classifier(points), target).backward()
                optimizer.step()
                if i % 10 == 0:
                    j, data = next(enumerate(testdataloader, 0))
                    points, target = data
                    classifier = classifier.eval()
                    pred = classifier(Variable(points).cuda())
        """
    ),
    Valid(
        """
        # a training loop that keeps a frozen part in eval mode: not an evaluation
        import torch
        def warm_up(gen):
            gen.train()
        def step_all(gen, critic, loader, opt):
            for x in loader:
                critic.eval()
                for batch in batches_of(x):
                    gen(batch)
                opt.zero_grad()
                critic(x).sum().backward()
                opt.step()
        """
    ),
    Valid(
        """
        # the evaluation sets the head's mode itself (deliberately in train mode: MC dropout)
        import torch
        def fit(backbone, head, loader):
            head.train()
            backbone.train()
        @torch.no_grad()
        def score(backbone, head, val_loader):
            backbone.eval()
            head.train()
            for x in val_loader:
                head(backbone(x))
        """
    ),
    Valid(
        """
        # the same script after net.eval(): the step helper runs the model in eval mode
        import torch
        from registry import make_model
        def run_step(net, task, batch):
            out = net(batch)
            return out, task.loss(batch, out)
        net = make_model(cfg)
        net.load_state_dict(torch.load(cfg.checkpoint))
        net.eval()
        with torch.no_grad():
            for n, batch in enumerate(task.episodes()):
                out, loss = run_step(net, task, batch)
                report(n, loss)
        """
    ),
    Valid(
        """
        # the training function of the pair ends by evaluating: the model leaves it in eval mode
        import torch
        def fit_ranker(ranker, queries, epochs):
            adam = torch.optim.Adam(ranker.parameters())
            ranker.train()
            for _ in range(epochs):
                for q, docs in queries:
                    adam.zero_grad()
                    ranker(q, docs).mean().backward()
                    adam.step()
            ranker.eval()
        def predict_ranker(ranker, q, docs):
            return ranker.score(q, docs).argsort()
        """
    ),
]


INVALID = [
    Invalid(
        """
        # a test batch scored every 10 steps, in training mode, outside no_grad
        import torch
        from torch.autograd import Variable
        from pointnet import PointNetCls
        classifier = PointNetCls(k=16)
        optimizer = torch.optim.SGD(classifier.parameters(), lr=0.01)
        for epoch in range(25):
            for i, (points, target) in enumerate(dataloader, 0):
                optimizer.zero_grad()
                F.nll_loss(classifier(points), target).backward()
                optimizer.step()
                if i % 10 == 0:
                    j, data = next(enumerate(testdataloader, 0))
                    points, target = data
                    points = Variable(points).transpose(2, 1).cuda()
                    pred = classifier(points)  # BUG
        """
    ),
    Invalid(
        """
        # a validation batch from an iterator made before the loop
        import torch
        def fit(net, opt, train_loader, val_loader, steps):
            val_batches = iter(val_loader)
            for step, (x, y) in enumerate(train_loader):
                opt.zero_grad()
                criterion(net(x), y).backward()
                opt.step()
                if step % 100 == 0:
                    vx, vy = next(val_batches)
                    log(criterion(net(vx.cuda()), vy).item())  # BUG
        """
    ),
    Invalid(
        """
        # a test batch drawn inside the training loop, evaluated in train mode
        import torch
        import torch.nn.functional as F
        def fit(net, opt, train_loader, test_loader, epochs):
            for epoch in range(epochs):
                for i, (x, y) in enumerate(train_loader):
                    opt.zero_grad()
                    F.nll_loss(net(x), y).backward()
                    opt.step()
                    if i % 10 == 0:
                        tx, ty = next(iter(test_loader))
                        with torch.no_grad():
                            print((net(tx).argmax(1) == ty).float().mean().item())  # BUG
        """
    ),
    Invalid(
        """
        # the model call sits in a self.eval_step(batch) helper
        import torch
        class Runner:
            def eval_step(self, batch):
                x, y = batch
                return (self.model(x).argmax(1) == y).float().mean()
            @torch.no_grad()
            def validate(self, val_loader):
                for batch in val_loader:  # BUG
                    self.eval_step(batch)
        """
    ),
    Invalid(
        """
        # a model of this file with dropout, evaluated in training mode
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
            def forward(self, x):
                return self.body(x)
        def evaluate(loader):
            model = Net()
            with torch.no_grad():
                for x, y in loader:  # BUG
                    out = model(x)
        """
    ),
    Invalid(
        """
        import torch
        def evaluate(model, val_loader):
            correct = 0
            with torch.no_grad():
                for x, y in val_loader:  # BUG
                    correct += (model(x).argmax(1) == y).sum().item()
            return correct
        """
    ),
    Invalid(
        """
        # model.train() at the top of the epoch, validation with no eval()
        import torch
        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            with torch.no_grad():
                for x, y in val_loader:  # BUG
                    val_loss += criterion(model(x), y).item()
        """
    ),
    Invalid(
        """
        # the caller trains and then evaluates without switching the mode
        import torch
        from torch.utils.data import DataLoader

        def accuracy(net, loader):
            hits = 0
            with torch.inference_mode():
                for batch in loader:  # BUG
                    hits += (net(batch[0]).argmax(1) == batch[1]).sum().item()
            return hits

        def main(net, optimizer):
            loader = DataLoader(ds, batch_size=64)
            net.train()
            for x, y in loader:
                optimizer.zero_grad()
                criterion(net(x), y).backward()
                optimizer.step()
            return accuracy(net, loader)
        """
    ),
    Invalid(
        """
        # the epoch's train() helper leaves the model in training mode
        import torch
        def train_epoch(model, loader, optimizer):
            model.train()
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()

        for epoch in range(10):
            train_epoch(model, train_loader, optimizer)
            with torch.no_grad():
                for x, y in val_loader:  # BUG
                    acc = (model(x).argmax(1) == y).float().mean()
        """
    ),
    Invalid(
        """
        # the evaluation switches the encoder to eval mode and forgets the head trained with it
        import torch
        from torch.utils.data import DataLoader
        def fit(backbone, head, loader, opt):
            backbone.train()
            head.train()
            for x, y in loader:
                opt.zero_grad()
                head(backbone(x)).sum().backward()
                opt.step()

        @torch.no_grad()
        def score(backbone, head, pairs, size):
            backbone.eval()
            z = backbone(pairs)
            for idx in DataLoader(range(len(pairs)), size):  # BUG
                head(z[idx])
        """
    ),
    Invalid(
        """
        # a while loop that fetches its batches, with the model in whatever mode training left it
        import torch
        from torch import nn
        class Predictor:
            def __init__(self):
                self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
            @torch.no_grad()
            def predict(self, batcher):
                while not batcher.last_batch():  # BUG
                    batch = batcher.next_batch()
                    preds.append(self.model(batch))
        """
    ),
    Invalid(
        """
        # validation after the training pass of the same function; the stray zero_grad() under
        # no_grad() steps nothing, and the caller's train() is the training's own mode
        import torch
        def fit_one_epoch(net, crit, optimizer, gen, gen_holdout):
            for it, batch in enumerate(gen):
                optimizer.zero_grad()
                crit(net(batch[0]), batch[1]).backward()
                optimizer.step()
            for it, batch in enumerate(gen_holdout):  # BUG
                with torch.no_grad():
                    optimizer.zero_grad()
                    held_loss = crit(net(batch[0]), batch[1])
        net = Detector().train()
        fit_one_epoch(net, crit, optimizer, gen, gen_holdout)
        """
    ),
    Invalid(
        """
        # an inference script: weights restored, nothing trained, never eval()
        import torch
        net = Factory.build(config)
        net.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
        with torch.no_grad():
            for episode, (inputs, targets) in enumerate(problem.episodes()):  # BUG
                log(net(inputs), targets)
        """
    ),
    Invalid(
        """
        # the style encoder is left in train mode by the training step, then used after net.eval()
        import torch
        def train_loop(net, style_encoder, loader, optimizer, epochs):
            for epoch in range(epochs):
                net.train()
                for batch in loader:
                    style_encoder.train()
                    loss = net(batch.text, style_encoder(batch.mel))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                net.eval()
                default_style = style_encoder(reference_mel)  # BUG
                torch.save({"net": net.state_dict(), "style": default_style}, "ckpt.pt")
        """
    ),
    Invalid(
        """
        # periodic evaluation inside the trainer's loop, the model two helper calls deep
        import torch
        class Trainer:
            def forward_loss(self, batch):
                return self.model(batch["x"]).log_softmax(-1).gather(-1, batch["y"]).mean()
            def train_step(self, batch):
                self.optimizer.zero_grad()
                self.forward_loss(batch).backward()
                self.optimizer.step()
            def eval_batch(self, batch):
                self.meter.update(self.forward_loss(batch))
            def fit(self):
                self.model.train()
                for step, batch in enumerate(self.train_loader):
                    self.train_step(batch)
                    if step % 500 == 0:
                        with torch.no_grad():
                            for val_batch in self.val_loader:  # BUG
                                self.eval_batch(val_batch)
        """
    ),
    Invalid(
        """
        # the classifier's own predict() runs it in whatever mode training left it
        import torch
        from torch import nn
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.5), nn.Linear(32, 4))
            def forward(self, x):
                return self.body(x)
            @torch.no_grad()
            def predict(self, x):
                return self(x).argmax(-1)  # BUG
        """
    ),
    Invalid(
        """
        # an inference script scores the weights it restored through a step helper, in training mode
        import torch
        from registry import make_model
        def run_step(net, task, batch):
            out = net(batch)
            return out, task.loss(batch, out)
        net = make_model(cfg)
        net.load_state_dict(torch.load(cfg.checkpoint))
        with torch.no_grad():
            for n, batch in enumerate(task.episodes()):  # BUG
                out, loss = run_step(net, task, batch)
                report(n, loss)
        """
    ),
    Invalid(
        """
        # one validation batch scored through a helper every 100 steps, in training mode
        import torch
        def validation(net, problem, xs, ys):
            with torch.no_grad():
                return problem.score(net(xs), ys)
        model = build_model(cfg)
        adam = torch.optim.Adam(model.parameters())
        gen_valid = problem.generator("valid")
        xs_valid, ys_valid = next(gen_valid)
        for step, (xs, ys) in enumerate(problem.generator("train")):
            adam.zero_grad()
            problem.loss(model(xs), ys).backward()
            adam.step()
            if step % 100 == 0:
                acc = validation(model, problem, xs_valid, ys_valid)  # BUG
        """
    ),
    Invalid(
        """
        # the inference half of a train_*/predict_* pair: the trainer leaves the model in training mode
        import torch
        def train_captioner(model, loader, lr):
            opt = torch.optim.Adam(model.parameters(), lr=lr)
            model.train()
            for images, captions in loader:
                opt.zero_grad()
                model(images, captions).backward()
                opt.step()
        def predict_captioner(model, image, max_len):
            feats = model.encoder(image)  # BUG
            return model.decoder.greedy(feats, max_len)
        """
    ),
]
