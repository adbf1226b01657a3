"""Fine-tuning helpers for a voice-activity detector: a running average and one training epoch."""
import torch


class AverageMeter:
    def __init__(self):
        self.sum, self.count = torch.zeros(()), 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def train(config, loader, model, criterion, optimizer):
    model.train()
    losses = AverageMeter()
    for x, targets, masks in loader:
        stacked = model(x)
        loss = criterion(stacked, targets)
        loss = (loss * masks).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.detach(), masks.numel())
    return losses.avg
