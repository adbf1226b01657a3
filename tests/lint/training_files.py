"""Generated training files of any size, for tests that check how the linter's work grows with
a file (benchmarks/lint_scaling.py times the same kind of file)."""

from __future__ import annotations

HEADER = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
'''

# Each kind of function asks the analyses its own questions: events of a loop, a scheduler's
# optimizer steps, helpers' effects, mode calls, clipping marks, samplers and their loaders.
VARIANTS = (
    '''
def train_{i}(model, loader, optimizer, criterion):
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        print(loss.item())
    scheduler.step()
''',
    '''
def evaluate_{i}(model, loader):
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            correct = (model(x).argmax(1) == y).sum().item()
    model.train()
    return correct
''',
    '''
def train_amp_{i}(model, loader, optimizer, accumulation=4):
    scaler = torch.cuda.amp.GradScaler()
    for n, (x, y) in enumerate(loader):
        with torch.autocast("cuda"):
            loss = F.cross_entropy(model(x), y) / accumulation
        scaler.scale(loss).backward()
        if (n + 1) % accumulation == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
''',
    '''
class Trainer{i}:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def _step(self, x, y):
        self.optimizer.zero_grad()
        loss = F.nll_loss(F.log_softmax(self.model(x), dim=1), y)
        loss.backward()
        self.optimizer.step()

    def fit(self, loader):
        for x, y in loader:
            self._step(x, y)

    def validate(self, loader):
        self.model.eval()
        for x, y in loader:
            self.model(x)
        self.model.train()
''',
    '''
def train_ddp_{i}(rank, dataset, net, opt):
    sampler = torch.utils.data.distributed.DistributedSampler(dataset)
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
        if rank == 0:
            torch.save(net.state_dict(), "checkpoint.pt")
''',
)


def training_file(n: int) -> str:
    """A file with ``n`` training functions (a trainer class counts as one), the kinds in turn."""
    return HEADER + "".join(VARIANTS[i % len(VARIANTS)].format(i=i) for i in range(n))
