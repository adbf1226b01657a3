"""A trainer whose step is spread over helpers: zero_grad() once, before the loop.
Expected: TRN102 at the fit loop's helper call; TRN601 and TRN602 at the validation loop."""
import torch
import torch.nn as nn


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

    def _backward(self, loss):
        loss.backward()

    def _update(self, batch):
        x, y = batch
        self._backward(self.loss(self.model(x), y))
        self.optimizer.step()

    def eval_step(self, batch):
        x, y = batch
        return (self.model(x).argmax(1) == y).float().mean()

    def fit(self, loader, epochs):
        self.optimizer.zero_grad()
        for epoch in range(epochs):
            for batch in loader:
                self._update(batch)  # EXPECT TRN102

    def validate(self, val_loader):
        for batch in val_loader:  # EXPECT TRN601 TRN602
            self.eval_step(batch)
