"""The detector's training solver: one batch, one epoch, and per-component loss bookkeeping."""
from collections import defaultdict

import torch
import torch.nn.functional as F


class YOLOLoss:
    """Box regression, objectness and class terms, returned together and one by one."""

    def __call__(self, predicts, targets):
        each = {
            "BoxLoss": F.smooth_l1_loss(predicts[:, :4], targets[:, :4]),
            "ObjLoss": F.binary_cross_entropy_with_logits(predicts[:, 4], targets[:, 4]),
            "ClsLoss": F.cross_entropy(predicts[:, 5:], targets[:, 5].long()),
        }
        return sum(each.values()), each


class ModelTrainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.loss_fn = YOLOLoss()

    def train_one_batch(self, images, targets):
        predicts = self.model(images)
        loss, loss_each = self.loss_fn(predicts, targets)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss_each

    def train_one_epoch(self, dataloader):
        self.model.train()
        total_loss = defaultdict(float)
        total_samples = 0
        for images, targets in dataloader:
            batch_size = images.shape[0]
            loss_each = self.train_one_batch(images, targets)
            for loss_name, loss_val in loss_each.items():
                total_loss[loss_name] += loss_val.detach() * batch_size
            total_samples += batch_size
        return {name: value / total_samples for name, value in total_loss.items()}

    def solve(self, dataloader, epochs):
        for epoch in range(epochs):
            epoch_loss = self.train_one_epoch(dataloader)
            print(f"epoch {epoch}:", {k: round(float(v), 4) for k, v in epoch_loss.items()})
