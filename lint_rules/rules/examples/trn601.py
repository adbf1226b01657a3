"""The examples of TRN601 (EvaluationWithoutNoGrad): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # volatile on a constant that feeds no forward, and a project's own `volatile` parameter
        import torch
        from torch.autograd import Variable
        class Detector(nn.Module):
            def __init__(self, boxes):
                super().__init__()
                self.anchors = Variable(boxes.forward(), volatile=True)
        pairs = sample_pairs(volatile=True)
        """
    ),
    Valid(
        """
        # a rollout: the policy's log-probabilities are trained on after the episode
        import torch
        for episode in range(500):
            obs, _ = world.reset()
            finished = False
            while not finished:
                probs = policy(torch.as_tensor(obs))
                action = torch.distributions.Categorical(probs).sample()
                obs, reward, finished, truncated, info = world.step(action.item())
                buffer.append((probs, action, reward))
            policy.learn(buffer)
        """
    ),
    Valid(
        """
        # the torch of a star import: the evaluation runs under no_grad
        import torch.nn as nn
        from common.helpers import *
        def accuracy_of(model, val_loader):
            with torch.no_grad():
                for images, labels in val_loader:
                    hits = (model(images).argmax(1) == labels).sum()
        """
    ),
    Valid(
        """
        # an inference script that froze the model's parameters: its forward records no graph
        import torch
        restorer = build_restorer()
        restorer.load_state_dict(torch.load("restorer.pth"))
        restorer.eval()
        for name, weight in restorer.named_parameters():
            weight.requires_grad = False
        for idx, noisy in enumerate(test_images):
            clean = restorer(noisy)
            save(clean, idx)
        """
    ),
    Valid(
        """
        # an evaluation helper with a name that says what it does to a model: a function, not a model
        import torch
        import retrieval_tools
        def score_all(opt, encoder):
            for name in opt.eval_datasets:
                metrics = retrieval_tools.evaluate_model(encoder, dataset=name)
                print(name, metrics)
        """
    ),
    Valid(
        """
        # the same wrapper, its inference method under no_grad()
        import torch
        class Detector:
            def __init__(self, weights):
                self.net = YoloBody(num_classes)
                self.net.load_state_dict(torch.load(weights, map_location="cpu"))
                self.net.eval()
            @torch.no_grad()
            def detect(self, image):
                boxes = self.net(to_tensor(image)[None])
                return boxes[0].cpu().numpy()
        """
    ),
    Valid(
        """
        # the same epoch function, its validation call under no_grad()
        import torch
        def run_epoch(model, optimizer, loader, is_train):
            for batch in loader:
                loss = criterion(model(batch.x), batch.y)
                if is_train:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        def fit(model, optimizer, train_loader, valid_loader):
            run_epoch(model, optimizer, train_loader, True)
            with torch.no_grad():
                run_epoch(model, optimizer, valid_loader, False)
        """
    ),
    Valid(
        """
        # weights restored to resume training: the file builds an optimizer
        import torch
        net = Factory.build(config)
        net.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        for episode, (inputs, targets) in enumerate(problem.episodes()):
            optimizer.zero_grad()
            crit(net(inputs), targets).backward()
            optimizer.step()
        """
    ),
    Valid(
        """
        # a rollout: the policy's action goes through the environment, whose observation is no
        # tensor of the model's; the function returns log-probabilities its caller trains on
        import torch
        def rollout(policy, env, horizon):
            obs = env.reset()
            log_probs = []
            for _ in range(horizon):
                dist = policy(obs)
                action = dist.sample()
                log_probs.append(dist.log_prob(action))
                obs = env.step(action)
            return log_probs
        """
    ),
    Valid(
        """
        # the helper disables gradients itself
        import torch
        class Runner:
            @torch.no_grad()
            def eval_step(self, batch):
                x, y = batch
                return (self.model(x).argmax(1) == y).float().mean()
            def validate(self, val_loader):
                self.model.eval()
                for batch in val_loader:
                    self.eval_step(batch)
        """
    ),
    Valid(
        """
        # a helper that trains: a training loop, not an evaluation
        import torch
        class Runner:
            def train_step(self, batch):
                x, y = batch
                self.opt.zero_grad()
                self.crit(self.model(x), y).backward()
                self.opt.step()
            def fit(self, train_loader):
                for batch in train_loader:
                    self.train_step(batch)
        """
    ),
    Valid(
        """
        # the same dicts, evaluated under no_grad
        import torch
        from torch.utils.data import DataLoader
        loaders = {"train": DataLoader(train_set), "dev": DataLoader(dev_set)}
        models = {"generator": torch.nn.Linear(8, 8)}
        models["generator"].eval()
        with torch.no_grad():
            for x, y in loaders["dev"]:
                out = models["generator"](x)

        # a dict of loaders filled elsewhere: the training split, and the evaluation under no_grad
        class Runner:
            def fit(self):
                for x, y in self.loaders["train"]:
                    self.opt.zero_grad()
                    self.loss_fn(self.net(x), y).backward()
                    self.opt.step()

            @torch.no_grad()
            def evaluate(self):
                for x, y in self.loaders["valid"]:
                    print(self.net(x))
        """
    ),
    Valid(
        """
        # no-grad entered through an ExitStack
        import contextlib
        import torch
        def evaluate(model, val_loader):
            with contextlib.ExitStack() as stack:
                stack.enter_context(torch.no_grad())
                for x, y in val_loader:
                    acc = (model(x).argmax(1) == y).float().mean()
        """
    ),
    Valid(
        """
        # a project decorator of this file that wraps torch.inference_mode
        import functools
        import torch
        def evaluation(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                with torch.inference_mode():
                    return fn(*args, **kwargs)
            return wrapper
        @evaluation
        def evaluate(model, val_loader):
            for x, y in val_loader:
                acc = (model(x).argmax(1) == y).float().mean()
        """
    ),
    Valid(
        """
        # the caller's caller disables gradients, two calls up
        import torch
        def evaluate(model, val_loader):
            for x, y in val_loader:
                acc = (model(x).argmax(1) == y).float().mean()
        def run_eval(model, loader):
            evaluate(model, loader)
        def main(model, loader):
            with torch.no_grad():
                run_eval(model, loader)
        """
    ),
    Valid(
        """
        import torch
        def evaluate(model, val_loader):
            model.eval()
            with torch.no_grad():
                for x, y in val_loader:
                    correct = (model(x).argmax(1) == y).sum()
        """
    ),
    Valid(
        """
        # decorated evaluation function, and inference_mode
        import torch

        @torch.no_grad()
        def validate(model, loader):
            for x, y in loader:
                out = model(x)

        @torch.inference_mode()
        def predict(model, test_loader):
            return [model(x) for x in test_loader]
        """
    ),
    Valid(
        """
        # the training loop: backward() and step()
        import torch
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        """
    ),
    Valid(
        """
        # the caller disables gradients around the evaluation function
        import torch
        def run_eval(model, loader):
            total = 0
            for x, y in loader:
                total += (model(x).argmax(1) == y).sum().item()
            return total

        with torch.no_grad():
            acc = run_eval(model, test_loader)
        """
    ),
    Valid(
        """
        # a training step hidden in a helper that receives the optimizer, and an
        # adversarial evaluation that needs input gradients
        import torch
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss_scaler(loss, optimizer, clip_grad=1.0)
        for x, y in test_loader:
            x.requires_grad_()
            loss = criterion(model(x), y)
            grad, = torch.autograd.grad(loss, x)
        """
    ),
    Valid(
        """
        # the mode is set explicitly: once for the script, or per phase
        import torch
        torch.set_grad_enabled(False)
        for x in test_loader:
            preds = model(x)

        def run(phase, loader):
            with torch.set_grad_enabled(phase == "train"):
                for x, y in loader:
                    out = model(x)
        """
    ),
    Valid(
        """
        # eval() then a loop fed by an environment, not by the loop's index: graphs freed each step
        import torch
        def rollout(policy, env, episodes):
            policy.eval()
            obs = env.reset()
            for _ in range(episodes):
                action = policy(torch.as_tensor(obs)).argmax().item()
                obs = env.step(action)
        """
    ),
    Valid(
        """
        # eval() then an index loop that computes input gradients: an attack, not an evaluation
        import torch
        def attack(classifier, images, labels, n):
            classifier.eval()
            for i in range(n):
                x = images[i].clone().requires_grad_(True)
                loss = classifier(x).sum()
                grad, = torch.autograd.grad(loss, x)
        """
    ),
    Valid(
        """
        # eval() then train() again before the loop: a training pass
        import torch
        def refresh(net, xs, opt):
            net.eval()
            net.train()
            for i in range(len(xs)):
                net(xs[i]).sum().backward()
                opt.step()
        """
    ),
    Valid(
        """
        # volatile=False, or volatile under no_grad, changes nothing
        import torch
        from torch.autograd import Variable
        a = Variable(torch.ones(1), volatile=False)
        with torch.no_grad():
            b = Variable(torch.ones(1), volatile=True)
        """
    ),
    Valid(
        """
        # the loop hands its outputs back (a caller may train on them), or reads only their shapes
        import torch
        def embed_all(encoder_net, chunks):
            out = []
            for i in range(len(chunks)):
                out.append(encoder_net(chunks[i]))
            return out
        def probe_width(backbone_model):
            return backbone_model(torch.zeros(1, 3, 64, 64)).shape[-1]
        def evaluate_loss(model, batch, criterion):
            return criterion(model(batch[0]), batch[1])
        """
    ),
    Valid(
        """
        # a validation step that hands its loss back: called under no_grad by the framework that runs it
        import torch
        class Classifier(torch.nn.Module):
            def validation_step(self, batch, batch_idx):
                x, y = batch
                return torch.nn.functional.cross_entropy(self(x), y)
        """
    ),
]


INVALID = [
    Invalid(
        """
        # the backbone is frozen, but its new head was unfrozen again: the head's graph is recorded
        import torch
        for p in model.parameters():
            p.requires_grad = False
        for p in model.head.parameters():
            p.requires_grad = True
        model.eval()
        for images, labels in val_loader:  # BUG
            hits = (model(images).argmax(1) == labels).sum()
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
            def validate(self, val_loader):
                self.model.eval()
                for batch in val_loader:  # BUG
                    self.eval_step(batch)
        """
    ),
    Invalid(
        """
        # models and loaders kept in dicts
        import torch
        from torch.utils.data import DataLoader
        loaders = {"train": DataLoader(train_set), "dev": DataLoader(dev_set)}
        models = {"generator": torch.nn.Linear(8, 8)}
        models["generator"].eval()
        for x, y in loaders["dev"]:  # BUG
            out = models["generator"](x)

        class Runner:
            def evaluate(self):
                self.net.eval()
                for x, y in self.loaders["valid"]:  # BUG
                    print(self.net(x))
        """
    ),
    Invalid(
        """
        # the ExitStack enters no_grad only after the evaluation loop
        import contextlib
        import torch
        def evaluate(model, val_loader):
            with contextlib.ExitStack() as stack:
                for x, y in val_loader:  # BUG
                    acc = (model(x).argmax(1) == y).float().mean()
                stack.enter_context(torch.no_grad())
        """
    ),
    Invalid(
        """
        # a project decorator that only logs does not disable gradients
        import functools
        import torch
        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                print("running", fn.__name__)
                return fn(*args, **kwargs)
            return wrapper
        @logged
        def evaluate(model, val_loader):
            for x, y in val_loader:  # BUG
                acc = (model(x).argmax(1) == y).float().mean()
        """
    ),
    Invalid(
        """
        import torch
        def evaluate(model, val_loader):
            model.eval()
            for x, y in val_loader:  # BUG
                correct = (model(x).argmax(1) == y).sum()
        """
    ),
    Invalid(
        """
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(test_set, batch_size=256)
        net = torch.nn.Sequential(torch.nn.Linear(8, 2))
        preds = []
        for i, (batch, _) in enumerate(loader):  # BUG
            preds.append(net(batch))
        """
    ),
    Invalid(
        """
        # no_grad covers the first loop only; enable_grad turns it back on
        import torch
        class Trainer:
            def validate(self):
                self.model.eval()
                with torch.no_grad():
                    for x, y in self.val_loader:
                        out = self.model(x)
                with torch.enable_grad():
                    for x, y in self.test_loader:  # BUG
                        out = self.model(x)
        """
    ),
    Invalid(
        """
        # the caller calls the evaluation function outside no_grad
        import torch
        def test(model, dataset):
            losses = []
            for x, y in tqdm(dataset):  # BUG
                losses.append(criterion(model(x), y))
            return losses

        model.eval()
        test(model, test_set)
        """
    ),
    Invalid(
        """
        # evaluation declared by eval(): a counting loop that slices the data by its index
        import torch
        class Forecaster:
            def score(self, features, targets, step):
                self.regressor.eval()
                errors = []
                for start in range(0, len(features), step):  # BUG
                    chunk = torch.from_numpy(features[start:start + step])
                    errors.append((self.regressor(chunk) - targets[start]).abs().mean().item())
                return errors

        def perplexity(lm, corpus, width):
            lm.eval()
            for k in range(0, corpus.size(0) - 1, width):  # BUG
                window, nxt = slice_window(corpus, k, width)
                out = lm.forward(window)
        """
    ),
    Invalid(
        """
        # volatile=True is ignored since PyTorch 0.4
        import torch
        from torch.autograd import Variable
        def embed(encoder, image):
            pixels = Variable(image.unsqueeze(0), volatile=True)  # BUG
            return encoder(pixels)
        """
    ),
    Invalid(
        """
        # a counting loop that walks the test set by its index, entered through a progress bar
        import torch
        from tqdm import tqdm
        def evaluate(model, test_set):
            model.eval()
            for idx in tqdm(range(len(test_set))):  # BUG
                mix, ref = test_set[idx]
                scores.append(metric(model(mix[None]), ref))
        """
    ),
    Invalid(
        """
        # a while loop that fetches its batches from a batcher
        import torch
        class Predictor:
            def predict(self, batcher):
                self.model.eval()
                while not batcher.last_batch():  # BUG
                    batch = batcher.next_batch()
                    preds.append(self.model(batch))
        """
    ),
    Invalid(
        """
        # a sampler that feeds the model its own output, step after step
        import torch
        def sample(model, x, steps):
            model.eval()
            for t in reversed(steps):  # BUG
                eps = model(x, t)
                x = x - 0.1 * eps
            return x
        """
    ),
    Invalid(
        """
        # an inference script: weights restored, nothing trained, the model run over episodes
        import torch
        net = Factory.build(config)
        net.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
        net.eval()
        for episode, (inputs, targets) in enumerate(problem.episodes()):  # BUG
            log(net(inputs), targets)
        """
    ),
    Invalid(
        """
        # one epoch function for both passes: the validation call turns the training off, not autograd
        import torch
        def run_epoch(model, optimizer, loader, is_train):
            for batch in loader:  # BUG
                loss = criterion(model(batch.x), batch.y)
                if is_train:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        def fit(model, optimizer, train_loader, valid_loader):
            run_epoch(model, optimizer, train_loader, True)
            run_epoch(model, optimizer, valid_loader, False)
        """
    ),
    Invalid(
        """
        # an inference wrapper: weights restored once, the detector run on every image with autograd on
        import torch
        class Detector:
            def __init__(self, weights):
                self.net = YoloBody(num_classes)
                self.net.load_state_dict(torch.load(weights, map_location="cpu"))
                self.net.eval()
            def detect(self, image):
                boxes = self.net(to_tensor(image)[None])  # BUG
                return boxes[0].cpu().numpy()
        """
    ),
    Invalid(
        """
        # every 500 steps, a validation batch scored after eval(), outside no_grad
        import torch
        for step, (x, y) in enumerate(train_loader):
            model.train()
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            if step % 500 == 0:
                model.eval()
                vx, vy = next(val_iter)
                val_acc = (model(vx).argmax(1) == vy).float().mean().item()  # BUG
        """
    ),
    Invalid(
        """
        # a self-ensemble written as a comprehension, after eval(), with autograd on
        import torch
        def ensemble(net, lowres):
            net.eval()
            views = [lowres, lowres.flip(-1), lowres.transpose(-1, -2)]
            outs = [net(v) for v in views]  # BUG
            return torch.stack(outs).mean(0)
        """
    ),
    Invalid(
        """
        # an inference loop whose function hands out only numbers: no caller can train on them
        import torch
        def voice_activity(signal, vad_model, width=512):
            probs = []
            for start in range(0, len(signal), width):  # BUG
                probs.append(vad_model(signal[start:start + width]).item())
            return [p > 0.5 for p in probs]
        speech = voice_activity(load_wave(path), torch.jit.load("vad.pt"))
        """
    ),
    Invalid(
        """
        # a sampler that hands back a string: its graph is recorded for nothing
        import torch
        class CharLM(torch.nn.Module):
            def write(self, vocab, n):
                token = torch.zeros(1, 1).long()
                chars = []
                while len(chars) < n:  # BUG
                    logits = self(token)
                    token = torch.multinomial(logits[0, -1].softmax(-1), 1)[None]
                    chars.append(vocab[token.item()])
                return "".join(chars)
        """
    ),
    Invalid(
        """
        # an evaluation step that hands out only floats
        import torch
        def ValidateBatch(net, batch, loss_fn):
            images, labels = batch
            logits = net(images.cuda())  # BUG
            return float(loss_fn(logits, labels)), (logits.argmax(1) == labels).sum().item()
        """
    ),
    Invalid(
        """
        # a trainer's own validation step after eval(): its forward records a graph for nothing
        import torch
        class Learner:
            def __init__(self):
                self.net = torch.nn.Linear(16, 4)
                self.opt = torch.optim.Adam(self.net.parameters())
            def fit_batch(self, x, y):
                self.net.train()
                loss = torch.nn.functional.cross_entropy(self.net(x), y)
                loss.backward()
                self.opt.step()
            def validate(self, x, y):
                self.net.eval()
                out = self.net(x)  # BUG
                return {"loss": torch.nn.functional.cross_entropy(out, y), "out": out}
        """
    ),
    Invalid(
        """
        # inference declared by eval() in a function that only draws what the model computes
        import torch
        def draw_alignment(acoustic_model, phones, path):
            acoustic_model.eval()
            _, _, align = acoustic_model.inference(phones)  # BUG
            acoustic_model.train()
            save_png(align.detach().cpu().numpy(), path)
        """
    ),
]
