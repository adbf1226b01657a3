"""Reductions of real bug-fix commits (benchmarks/realbugs/manifest.toml), in our own words.

Each reduction is the bug's shape before the fix, which must be reported with the case's code, and
the shape after the fix, which must not. Shapes the linter catches are asserted here: inline
(CAUGHT_TODAY), or as folders of benchmarks/realbugs/reductions/ named in CAUGHT_REDUCTIONS (those
score.py scores, some of them multi-file). The other folders are the ones it misses; the tests below
only check that they stay well-formed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from lint_rules import lint_source, registry

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "realbugs"
sys.path.insert(0, str(BENCH))

from realbugs_manifest import SHAPES, ManifestError, load_manifest, load_reductions  # noqa: E402

RESERVED = {"Lightning-AI/pytorch-lightning", "facebookresearch/fairseq", "facebookresearch/detectron2",
            "mlfoundations/open_clip", "ultralytics/yolov5", "eriklindernoren/PyTorch-GAN",
            "hunkim/PyTorchZeroToAll", "kuangliu/pytorch-cifar", "MorvanZhou/PyTorch-Tutorial",
            "yunjey/pytorch-tutorial"}

# (name, expected code, before the fix, after the fix). The name's suffix is the manifest case.
CAUGHT_TODAY = [
    ("clear-each-micro-batch-of-an-accumulation-window/prediff", "TRN101", """
        import torch

        def fit(model, loader, opt, window):
            for n, (images, _) in enumerate(loader):
                opt.zero_grad(set_to_none=True)
                recon = model(images)
                (torch.mean((recon - images) ** 2) / window).backward()
                if (n + 1) % window == 0:
                    opt.step()
        """, """
        import torch

        def fit(model, loader, opt, window):
            for n, (images, _) in enumerate(loader):
                recon = model(images)
                (torch.mean((recon - images) ** 2) / window).backward()
                if (n + 1) % window == 0:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
        """),
    ("clear-in-per-batch-helper-of-accumulation/prediff", "TRN101", """
        import torch

        class Trainer:
            def __init__(self, net, window):
                self.net, self.window = net, window
                self.optimizer = torch.optim.Adam(net.parameters())

            def one_batch(self, batch, index):
                self.optimizer.zero_grad()
                (self.net(batch).mean() / self.window).backward()
                if index % self.window == self.window - 1:
                    self.optimizer.step()

            def run(self, loader):
                for index, batch in enumerate(loader):
                    self.one_batch(batch, index)
        """, """
        import torch

        class Trainer:
            def __init__(self, net, window):
                self.net, self.window = net, window
                self.optimizer = torch.optim.Adam(net.parameters())

            def one_batch(self, batch, index):
                if index % self.window == 0:
                    self.optimizer.zero_grad()
                (self.net(batch).mean() / self.window).backward()
                if index % self.window == self.window - 1:
                    self.optimizer.step()

            def run(self, loader):
                for index, batch in enumerate(loader):
                    self.one_batch(batch, index)
        """),
    ("held-out-batch-scored-in-train-mode/pointnet.pytorch", "TRN602", """
        import torch
        import torch.nn.functional as F
        from torch.autograd import Variable
        from shapes import ShapeClassifier

        clf = ShapeClassifier(classes=40)
        sgd = torch.optim.SGD(clf.parameters(), lr=0.01, momentum=0.9)
        for epoch in range(10):
            for step, (cloud, label) in enumerate(train_batches):
                sgd.zero_grad()
                F.nll_loss(clf(cloud), label).backward()
                sgd.step()
                if step % 20 == 0:
                    _, held = next(enumerate(test_batches, 0))
                    cloud, label = held
                    cloud, label = Variable(cloud).cuda(), Variable(label).cuda()
                    print(F.nll_loss(clf(cloud.transpose(2, 1)), label).item())
        """, """
        import torch
        import torch.nn.functional as F
        from torch.autograd import Variable
        from shapes import ShapeClassifier

        clf = ShapeClassifier(classes=40)
        sgd = torch.optim.SGD(clf.parameters(), lr=0.01, momentum=0.9)
        for epoch in range(10):
            for step, (cloud, label) in enumerate(train_batches):
                clf = clf.train()
                sgd.zero_grad()
                F.nll_loss(clf(cloud), label).backward()
                sgd.step()
                if step % 20 == 0:
                    _, held = next(enumerate(test_batches, 0))
                    cloud, label = held
                    cloud, label = Variable(cloud).cuda(), Variable(label).cuda()
                    clf = clf.eval()
                    print(F.nll_loss(clf(cloud.transpose(2, 1)), label).item())
        """),
    ("set-epoch-never-called/simclr", "TRN302", """
        from torch.utils.data import DataLoader, DistributedSampler

        def main(train_set, model, opt, epochs):
            sampler = DistributedSampler(train_set) if dist else None
            loader = DataLoader(train_set, batch_size=32, sampler=sampler, shuffle=sampler is None)
            for epoch in range(epochs):
                run_epoch(loader, model, opt)
        """, """
        from torch.utils.data import DataLoader, DistributedSampler

        def main(train_set, model, opt, epochs):
            sampler = DistributedSampler(train_set) if dist else None
            loader = DataLoader(train_set, batch_size=32, sampler=sampler, shuffle=sampler is None)
            for epoch in range(epochs):
                if sampler is not None:
                    sampler.set_epoch(epoch)
                run_epoch(loader, model, opt)
        """),
    ("wrapper-rebinds-the-loader-name/dalle-pytorch", "TRN302", """
        from torch.utils.data import DataLoader, DistributedSampler

        def run(backend, dataset, model, opt, epochs):
            sampler = DistributedSampler(dataset)
            loader = DataLoader(dataset, batch_size=4, sampler=sampler)
            model, opt, loader = backend.wrap(model, opt, loader)
            for epoch in range(epochs):
                for x, y in loader:
                    model(x, y).backward()
                    opt.step()
                    opt.zero_grad()
        """, """
        from torch.utils.data import DataLoader, DistributedSampler

        def run(backend, dataset, model, opt, epochs):
            sampler = DistributedSampler(dataset)
            loader = DataLoader(dataset, batch_size=4, sampler=sampler)
            model, opt, loader = backend.wrap(model, opt, loader)
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for x, y in loader:
                    model(x, y).backward()
                    opt.step()
                    opt.zero_grad()
        """),
    ("loader-by-keyword-through-backend-wrapper/dalle-pytorch", "TRN302", """
        import torch
        from torch.utils.data import DataLoader

        shards = torch.utils.data.distributed.DistributedSampler(pairs, num_replicas=world, rank=rank) \
            if not shuffled else None
        batches = DataLoader(pairs, batch_size=8, shuffle=shuffled, sampler=shards)
        (engine, optim, engine_batches, sched) = backend.wrap_all(
            model=net, optimizer=adam, data=pairs if use_engine else batches, scheduler=None)
        for epoch in range(n_epochs):
            for i, (tokens, pixels) in enumerate(engine_batches):
                engine(tokens, pixels).backward()
                optim.step()
                optim.zero_grad()
        """, """
        import torch
        from torch.utils.data import DataLoader

        shards = torch.utils.data.distributed.DistributedSampler(pairs, num_replicas=world, rank=rank) \
            if not shuffled else None
        batches = DataLoader(pairs, batch_size=8, shuffle=shuffled, sampler=shards)
        (engine, optim, engine_batches, sched) = backend.wrap_all(
            model=net, optimizer=adam, data=pairs if use_engine else batches, scheduler=None)
        for epoch in range(n_epochs):
            if shards is not None:
                shards.set_epoch(epoch)
            for i, (tokens, pixels) in enumerate(engine_batches):
                engine(tokens, pixels).backward()
                optim.step()
                optim.zero_grad()
        """),
    ("loader-dict-kept-by-trainer-class/parallelwavegan", "TRN302", """
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler

        class Runner:
            def __init__(self, nets, loaders, steps=0):
                self.nets = nets
                self.loaders = loaders
                self.steps = steps

            def loop(self):
                while self.steps < 1000:
                    self._one_pass()

            def _one_pass(self):
                for n, batch in enumerate(self.loaders["train"], 1):
                    self.steps += 1

        def main(sets, nets):
            shard = DistributedSampler(sets["train"], shuffle=True)
            loaders = {"train": DataLoader(sets["train"], sampler=shard),
                       "dev": DataLoader(sets["dev"])}
            Runner(nets=nets, loaders=loaders).loop()
        """, """
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler

        class Runner:
            def __init__(self, nets, loaders, shards, steps=0):
                self.nets = nets
                self.loaders = loaders
                self.shards = shards
                self.steps = steps

            def loop(self):
                while self.steps < 1000:
                    self._one_pass()

            def _one_pass(self):
                self.shards["train"].set_epoch(self.steps)
                for n, batch in enumerate(self.loaders["train"], 1):
                    self.steps += 1

        def main(sets, nets):
            shards = {"train": None}
            shards["train"] = DistributedSampler(sets["train"], shuffle=True)
            loaders = {"train": DataLoader(sets["train"], sampler=shards["train"]),
                       "dev": DataLoader(sets["dev"])}
            Runner(nets=nets, loaders=loaders, shards=shards).loop()
        """),
    ("validate-mid-epoch-leaves-eval/pytorch-fcn", "TRN603", """
        import torch

        class Fitter:
            def check(self):
                self.net.eval()
                with torch.no_grad():
                    return sum(self.net(x).sum().item() for x in self.held_out)

            def epoch(self):
                self.net.train()
                for i, (x, y) in enumerate(self.batches):
                    if i % self.every == 0:
                        self.check()
                    self.opt.zero_grad()
                    self.crit(self.net(x), y).backward()
                    self.opt.step()
        """, """
        import torch

        class Fitter:
            def check(self):
                self.net.eval()
                with torch.no_grad():
                    score = sum(self.net(x).sum().item() for x in self.held_out)
                self.net.train()
                return score

            def epoch(self):
                self.net.train()
                for i, (x, y) in enumerate(self.batches):
                    if i % self.every == 0:
                        self.check()
                    self.opt.zero_grad()
                    self.crit(self.net(x), y).backward()
                    self.opt.step()
        """),
    ("eval-for-test-loss-inside-step-loop/ncsn", "TRN603", """
        import torch

        def train(net, opt, loader, probe):
            net.train()
            for step, x in enumerate(loader):
                loss = ((net(x) - x) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    net.eval()
                    with torch.no_grad():
                        print(((net(probe) - probe) ** 2).mean().item())
        """, """
        import torch

        def train(net, opt, loader, probe):
            for step, x in enumerate(loader):
                net.train()
                loss = ((net(x) - x) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    net.eval()
                    with torch.no_grad():
                        print(((net(probe) - probe) ** 2).mean().item())
        """),
    ("gradients-never-cleared/wekws", "TRN102", """
        import torch

        def train_one_epoch(model, loader, optimizer, criterion):
            model.train()
            for feats, target in loader:
                loss = criterion(model(feats), target)
                loss.backward()
                optimizer.step()
        """, """
        import torch

        def train_one_epoch(model, loader, optimizer, criterion):
            model.train()
            for feats, target in loader:
                loss = criterion(model(feats), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """),
    ("clip-scaled-gradients/pytorch-unet", "TRN803", """
        import torch

        def step(model, batch, optimizer, scaler, max_norm):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda"):
                loss = model(batch)
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
        """, """
        import torch

        def step(model, batch, optimizer, scaler, max_norm):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda"):
                loss = model(batch)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
        """),
    ("scheduler-stepped-first/ssd", "TRN801", """
        import torch

        def do_train(model, loader, optimizer, scheduler):
            for it, (images, targets) in enumerate(loader):
                scheduler.step()
                loss = model(images, targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """, """
        import torch

        def do_train(model, loader, optimizer, scheduler):
            for it, (images, targets) in enumerate(loader):
                loss = model(images, targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step()
        """),
    ("scheduler-before-same-file-helper/deformable-protopnet", "TRN801", """
        import torch

        def run_epoch(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()

        def main(model, loader, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5)
            for epoch in range(epochs):
                schedule.step()
                run_epoch(model, loader, optimizer)
        """, """
        import torch

        def run_epoch(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()

        def main(model, loader, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5)
            for epoch in range(epochs):
                run_epoch(model, loader, optimizer)
                schedule.step()
        """),
    ("test-accuracy-in-train-mode/vaal", "TRN602", """
        import torch

        class Solver:
            def test(self, task_model):
                correct = 0
                for imgs, labels in self.test_loader:
                    with torch.no_grad():
                        correct += (task_model(imgs).argmax(1) == labels).sum().item()
                return correct
        """, """
        import torch

        class Solver:
            def test(self, task_model):
                task_model.eval()
                correct = 0
                for imgs, labels in self.test_loader:
                    with torch.no_grad():
                        correct += (task_model(imgs).argmax(1) == labels).sum().item()
                return correct
        """),
    ("eval-step-helper-over-loader-dict/parallelwavegan", "TRN601", """
        import torch

        class Runner:
            def __init__(self, nets, loaders, losses):
                self.model = nets
                self.data_loader = loaders
                self.criterion = losses

            def _dev_step(self, batch):
                noise, cond, wave = batch
                fake = self.model["generator"](noise, cond)
                self.total += self.criterion["stft"](fake, wave).item()

            def _dev_epoch(self):
                for key in self.model.keys():
                    self.model[key].eval()
                for batch in self.data_loader["dev"]:
                    self._dev_step(batch)
        """, """
        import torch

        class Runner:
            def __init__(self, nets, loaders, losses):
                self.model = nets
                self.data_loader = loaders
                self.criterion = losses

            def _dev_step(self, batch):
                noise, cond, wave = batch
                fake = self.model["generator"](noise, cond)
                self.total += self.criterion["stft"](fake, wave).item()

            def _dev_epoch(self):
                for key in self.model.keys():
                    self.model[key].eval()
                for batch in self.data_loader["dev"]:
                    with torch.no_grad():
                        self._dev_step(batch)
        """),
    ("validation-with-autograd/end2end-asr-pytorch", "TRN601", """
        import torch

        def validate(model, valid_loader):
            model.eval()
            total = 0.0
            for src, tgt in valid_loader:
                pred = model(src, tgt)
                total += pred.sum().item()
            return total
        """, """
        import torch

        def validate(model, valid_loader):
            model.eval()
            total = 0.0
            for src, tgt in valid_loader:
                with torch.no_grad():
                    pred = model(src, tgt)
                total += pred.sum().item()
            return total
        """),
    ("validation-loader-attribute/parallelwavegan", "TRN601", """
        import torch

        class Runner:
            def evaluate(self):
                self.net.eval()
                total = 0.0
                for x, y in self.valid_loader:
                    total += self.loss_fn(self.net(x), y).item()
                self.net.train()
                return total
        """, """
        import torch

        class Runner:
            @torch.no_grad()
            def evaluate(self):
                self.net.eval()
                total = 0.0
                for x, y in self.valid_loader:
                    total += self.loss_fn(self.net(x), y).item()
                self.net.train()
                return total
        """),
    ("functional-dropout-always-on/pytorch-fm", "TRN604", """
        import torch
        import torch.nn.functional as F

        class Attention(torch.nn.Module):
            def forward(self, x):
                weights = F.softmax(self.score(x), dim=1)
                weights = F.dropout(weights, p=self.p)
                return self.fc((weights * x).sum(dim=1))
        """, """
        import torch
        import torch.nn.functional as F

        class Attention(torch.nn.Module):
            def forward(self, x):
                weights = F.softmax(self.score(x), dim=1)
                weights = F.dropout(weights, p=self.p, training=self.training)
                return self.fc((weights * x).sum(dim=1))
        """),
    ("running-loss-keeps-graphs/imvisible", "TRN106", """
        import torch

        def train(model, loader, optimizer, criterion):
            running = 0
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running += loss
            return running / len(loader)
        """, """
        import torch

        def train(model, loader, optimizer, criterion):
            running = 0
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running += loss.item()
            return running / len(loader)
        """),
    ("shuffle-and-distributed-sampler/multivae", "TRN303", """
        from torch.utils.data import DataLoader, DistributedSampler

        def train_loader(self, dataset):
            sampler = DistributedSampler(dataset) if self.distributed else None
            return DataLoader(dataset, batch_size=self.batch_size, shuffle=True, sampler=sampler)
        """, """
        from torch.utils.data import DataLoader, DistributedSampler

        def train_loader(self, dataset):
            sampler = DistributedSampler(dataset) if self.distributed else None
            return DataLoader(dataset, batch_size=self.batch_size, shuffle=sampler is None, sampler=sampler)
        """),
    ("checkpoint-per-node/pytorch-distributed", "TRN304", """
        import torch

        def save_checkpoint(model, path):
            torch.save({"state_dict": model.state_dict()}, path)

        def main(args, model, loader):
            torch.distributed.init_process_group("nccl")
            for epoch in range(args.epochs):
                train(loader, model)
                if args.local_rank == 0:
                    save_checkpoint(model, f"ckpt_{epoch}.pt")
        """, """
        import torch

        def save_checkpoint(model, path):
            torch.save({"state_dict": model.state_dict()}, path)

        def main(args, model, loader):
            torch.distributed.init_process_group("nccl")
            for epoch in range(args.epochs):
                train(loader, model)
                if args.local_rank == 0 and args.global_rank == 0:
                    save_checkpoint(model, f"ckpt_{epoch}.pt")
        """),
    ("attributes-before-module-init/grelu", "TRN404", """
        import torch.nn as nn

        class Trunk(nn.Module):
            def __init__(self, channels):
                self.channels = channels
                self.blocks = nn.ModuleList([nn.Conv1d(4, channels, 3)])
        """, """
        import torch.nn as nn

        class Trunk(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.channels = channels
                self.blocks = nn.ModuleList([nn.Conv1d(4, channels, 3)])
        """),
    ("hub-weights-unpickled/mamba-minimal", "TRN701", """
        import torch

        def load_pretrained(name):
            return torch.load(download(name))
        """, """
        import torch

        def load_pretrained(name):
            return torch.load(download(name), weights_only=True)
        """),
    ("whole-network-pickled/wsddn-pytorch", "TRN702", """
        import torch
        from network import Detector

        net = Detector()
        for epoch in range(20):
            train_one_epoch(net)
            torch.save(net, f"states/epoch_{epoch}.pt")
        """, """
        import torch
        from network import Detector

        net = Detector()
        for epoch in range(20):
            train_one_epoch(net)
            torch.save(net.state_dict(), f"states/epoch_{epoch}.pt")
        """),
    ("deprecated-cuda-amp-scaler/linesight", "TRN802", """
        import torch

        scaler = torch.cuda.amp.GradScaler()
        """, """
        import torch

        scaler = torch.amp.GradScaler("cuda")
        """),
    ("leaf-lost-by-cuda/randomcnn-voice-transfer", "TRN105", """
        import torch

        def make_canvas(shape, use_cuda):
            canvas = torch.randn(shape, requires_grad=True)
            if use_cuda:
                canvas = canvas.cuda()
            return canvas, torch.optim.Adam([canvas])
        """, """
        import torch

        def make_canvas(shape, use_cuda):
            canvas = torch.randn(shape)
            if use_cuda:
                canvas = canvas.cuda()
            canvas.requires_grad_(True)
            return canvas, torch.optim.Adam([canvas])
        """),
    ("sigmoid-model-in-same-file/min-lstm-torch", "TRN502", """
        import torch
        import torch.nn as nn

        class TinyRNN(nn.Module):
            def forward(self, x):
                return torch.sigmoid(self.fc(x))

        model = TinyRNN()
        criterion = nn.BCELoss()
        for x, y in loader:
            criterion(model(x), y).backward()
        """, """
        import torch
        import torch.nn as nn

        class TinyRNN(nn.Module):
            def forward(self, x):
                return self.fc(x)

        model = TinyRNN()
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            criterion(model(x), y).backward()
        """),
    ("same-file-modules-in-a-list/detectorch", "TRN401", """
        import torch

        class Head(torch.nn.Module):
            pass

        class Detector(torch.nn.Module):
            def __init__(self, scales):
                super().__init__()
                self.heads = [Head() for s in scales]
        """, """
        import torch

        class Head(torch.nn.Module):
            pass

        class Detector(torch.nn.Module):
            def __init__(self, scales):
                super().__init__()
                self.heads = torch.nn.ModuleList([Head() for s in scales])
        """),
    ("state-tensor-set-in-init/xlstm-pytorch", "TRN402", """
        import torch
        import torch.nn as nn

        class GatedCell(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.gate = nn.Linear(width, width)
                self.carry = torch.zeros(1, width)
        """, """
        import torch
        import torch.nn as nn

        class GatedCell(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.gate = nn.Linear(width, width)
                self.register_buffer("carry", torch.zeros(1, width))
        """),
    ("forward-called-directly/pixyz", "TRN403", """
        import torch

        class Joint(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.p = torch.nn.Linear(4, 4)

            def sample(self, x):
                # the child's forward hooks never run (the fix calls self.p(...)); a bare
                # self.forward(...) inside the module's own method is quiet since #14's triage
                return self.p.forward(x)
        """, """
        import torch

        class Joint(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.p = torch.nn.Linear(4, 4)

            def sample(self, x):
                return self.p(x)
        """),
    ("moved-after-ddp-wrap/pytorch-distributed-example", "TRN804", """
        import torch
        import torch.nn as nn

        def build(Classifier, use_cuda):
            device = torch.device("cuda" if use_cuda else "cpu")
            net = Classifier()
            if use_cuda:
                net = nn.parallel.DistributedDataParallel(net)
            net.to(device)
            return net
        """, """
        import torch
        import torch.nn as nn

        def build(Classifier, use_cuda):
            device = torch.device("cuda" if use_cuda else "cpu")
            net = Classifier().to(device)
            if use_cuda:
                net = nn.parallel.DistributedDataParallel(net)
            return net
        """),
    ("softmax-into-cross-entropy/transformer-gcn-qa", "TRN501", """
        import torch
        import torch.nn as nn

        def candidate_loss(scores, target):
            probs = torch.softmax(scores, dim=0)
            return nn.CrossEntropyLoss()(probs.view(1, -1), target)
        """, """
        import torch
        import torch.nn as nn

        def candidate_loss(scores, target):
            return nn.CrossEntropyLoss()(scores.view(1, -1), target)
        """),
    ("criterion-attribute-set-in-init/graph-neural-net", "TRN501", """
        import torch
        import torch.nn as nn

        class MatchingLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.criterion = nn.CrossEntropyLoss()

            def forward(self, scores, target):
                return self.criterion(torch.softmax(scores, -1), target)
        """, """
        import torch
        import torch.nn as nn

        class MatchingLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.criterion = nn.CrossEntropyLoss()

            def forward(self, scores, target):
                return self.criterion(scores, target)
        """),
]


def _codes(source: str) -> set[str]:
    result = lint_source(textwrap.dedent(source), "reduction.py", registry.default_codes(preview=True))  # every rule
    assert not result.internal_error, [f.message for f in result.findings]
    return {f.code for f in result.findings}


@pytest.mark.parametrize(("name", "code", "before", "after"), CAUGHT_TODAY, ids=[c[0] for c in CAUGHT_TODAY])
def test_reduction_before_fix_is_reported(name, code, before, after):
    assert code in _codes(before)


@pytest.mark.parametrize(("name", "code", "before", "after"), CAUGHT_TODAY, ids=[c[0] for c in CAUGHT_TODAY])
def test_reduction_after_fix_is_quiet(name, code, before, after):
    assert code not in _codes(after)


# Folders of benchmarks/realbugs/reductions/ the linter catches (before reported, after quiet).
CAUGHT_REDUCTIONS = [
    "trn101_zero_grad_every_micro_batch",
    "trn105_variable_requires_grad_then_cuda",
    "trn106_output_dict_kept_for_epoch",
    "trn302_loader_through_wrapper",
    "trn302_sampler_in_dict",
    "trn401_annotated_list_filled_by_append",
    "trn401_module_list_from_a_directory_on_sys_path",
    "trn401_project_module_in_list",
    "trn402_state_created_in_init_helper",
    "trn501_criterion_parameter_default",
    "trn501_exp_of_log_softmax",
    "trn501_rows_of_probabilities",
    "trn501_tuple_output_through_loss_helper",
    "trn502_sigmoid_head_in_model_module",
    "trn601_loader_from_dict",
    "trn601_model_call_in_helper",
    "trn602_test_batch_inside_train_loop",
    "trn603_model_only_passed_to_loss_helper",
    "trn604_dropout_module_built_in_forward",
    "trn702_state_dict_method_not_called",
    "trn801_step_inside_project_helper",
    "trn804_wrap_differs_by_branch",
]


@pytest.mark.parametrize("name", CAUGHT_REDUCTIONS)
def test_caught_reduction_folder_is_reported_before_and_quiet_after(name):
    from score import codes_reported

    reduction = {r.name: r for r in load_reductions(BENCH / "reductions")}[name]
    assert reduction.expected in codes_reported(reduction.before)
    assert reduction.expected not in codes_reported(reduction.after)


def test_manifest_is_well_formed_and_wide_enough():
    cases = load_manifest(BENCH / "manifest.toml")
    repositories = {case.repository for case in cases}
    assert len(cases) >= 30 and len(repositories) >= 10
    assert not repositories & RESERVED, "reserved repositories must not be used"
    assert {case.expected for case in cases} <= set(registry.active_rules())


def test_every_missed_reduction_parses_and_names_a_valid_code():
    manifest_ids = {case.id for case in load_manifest(BENCH / "manifest.toml")}
    reductions = load_reductions(BENCH / "reductions")
    assert reductions, "benchmarks/realbugs/reductions/ is empty"
    for r in reductions:
        assert r.expected in registry.active_rules(), (r.name, r.expected)
        assert r.shape in SHAPES
        assert r.case in manifest_ids, f"{r.name}: case={r.case!r} is not in manifest.toml"
        for side in (r.before.parent, r.after.parent):
            for path in side.rglob("*.py"):
                cst.parse_module(path.read_text(encoding="utf-8"))  # raises on a syntax error


def test_malformed_reduction_is_a_clear_error(tmp_path):
    (tmp_path / "r" / "before").mkdir(parents=True)
    (tmp_path / "r" / "after").mkdir()
    (tmp_path / "r" / "before" / "a.py").write_text("# realbug-expected: TRN601 shape=sideways case=x\n")
    (tmp_path / "r" / "after" / "a.py").write_text("# realbug-expected: TRN601 shape=sideways case=x\n")
    with pytest.raises(ManifestError, match="shape='sideways'; allowed: direct"):
        load_reductions(tmp_path)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_fetch_and_score_a_case_end_to_end(tmp_path):
    # A throwaway repository with one bug-fix commit stands in for a mirror of a public one.
    repo = tmp_path / "mirrors" / "someone+trainer"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    _, _, before, after = {c[0]: c for c in CAUGHT_TODAY}["gradients-never-cleared/wekws"]  # TRN102
    (repo / "train.py").write_text(textwrap.dedent(before))
    _git(repo, "add", "train.py")
    _git(repo, "commit", "-qm", "bug")
    parent = _git(repo, "rev-parse", "HEAD")
    (repo / "train.py").write_text(textwrap.dedent(after))
    _git(repo, "commit", "-qam", "fix")
    fix = _git(repo, "rev-parse", "HEAD")
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(textwrap.dedent(f"""
        [[case]]
        id = "trainer-trn102"
        repository = "someone/trainer"
        fix_commit = "{fix}"
        parent_commit = "{parent}"
        path = "train.py"
        expected = "TRN102"
        shape = "direct"
        bug = "no zero_grad"
        source = "test"

        [[case]]
        id = "trainer-trn801"
        repository = "someone/trainer"
        fix_commit = "{fix}"
        parent_commit = "{parent}"
        path = "train.py"
        expected = "TRN801"
        shape = "direct"
        bug = "a code this file does not have"
        source = "test"
        """))
    data = tmp_path / "data"
    fetched = subprocess.run([sys.executable, str(BENCH / "fetch_cases.py"), "--mirrors", str(tmp_path / "mirrors"),
                              "--out", str(data), "--manifest", str(manifest)], capture_output=True, text=True)
    assert fetched.returncode == 0, fetched.stderr
    assert (data / "someone+trainer" / parent / "train.py").read_text() == textwrap.dedent(before)
    scored = subprocess.run([sys.executable, str(BENCH / "score.py"), "--root", str(data), "--manifest",
                             str(manifest), "--no-reductions"], capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    lines = scored.stdout.splitlines()
    assert any(line.split() == ["TRN102", "1/1", "1/1"] for line in lines), scored.stdout
    assert any(line.split() == ["TRN801", "0/1", "1/1"] for line in lines), scored.stdout
    assert any(line.split() == ["TOTAL", "1/2", "2/2"] for line in lines), scored.stdout
    assert "trainer-trn801" in scored.stdout.split("missed")[1]


def test_fetch_names_a_missing_clone(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH / "fetch_cases.py"), "--mirrors", str(tmp_path),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 1
    assert "not materialised: no clone of Spijkervet/SimCLR under" in done.stderr
