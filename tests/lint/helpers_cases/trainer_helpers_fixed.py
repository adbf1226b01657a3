"""The near-miss twin of trainer_helpers.py: gradients cleared by a helper every step,
validation under a project decorator that wraps torch.no_grad, eval mode set by a
helper with a constant argument. Expected: no finding."""
import functools

import torch
import torch.nn as nn


def evaluation(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch.no_grad():
            return fn(*args, **kwargs)
    return wrapper


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.2), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, model, loss_fn=nn.CrossEntropyLoss()):
        self.model = model
        self.loss = loss_fn
        self._build_optimizer()

    def _build_optimizer(self):
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def reset_grad(self):
        self.optimizer.zero_grad()

    def set_mode(self, mode):
        if mode == "train":
            self.model.train()
        else:
            self.model.eval()

    def _update(self, batch):
        x, y = batch
        self.loss(self.model(x), y).backward()
        self.optimizer.step()

    def eval_step(self, batch):
        x, y = batch
        return (self.model(x).argmax(1) == y).float().mean()

    def fit(self, loader, val_loader, epochs):
        for epoch in range(epochs):
            self.set_mode("train")
            for batch in loader:
                self.reset_grad()
                self._update(batch)
            self.validate(val_loader)

    @evaluation
    def validate(self, val_loader):
        self.set_mode("eval")
        for batch in val_loader:
            self.eval_step(batch)
