"""Fit a convolutional neural process to gridded temperature anomalies, one call of train_epoch per epoch."""
import numpy as np
import torch
from torch import nn

from train import train_epoch


class ConvNP:
    """A ConvNP: ``model`` is the torch network, ``loss_fn`` the task's Gaussian negative log-likelihood."""

    def __init__(self, channels=8):
        self.model = nn.Sequential(
            nn.Conv2d(2, channels, 5, padding=2), nn.ReLU(),
            nn.Conv2d(channels, channels, 5, padding=2), nn.ReLU(),
            nn.Conv2d(channels, 2, 1))

    def loss_fn(self, task, normalise=True):
        density = task["context_mask"]
        out = self.model(torch.stack([task["context"] * density, density], dim=1))
        mean, log_std = out[:, 0], out[:, 1].clamp(-5, 5)
        nll = 0.5 * ((task["target"] - mean) / log_std.exp()) ** 2 + log_std
        return nll.mean() if normalise else nll.sum()


def make_tasks(n=12, size=16):
    grid = torch.linspace(0, 3, size)
    tasks = []
    for i in range(n):
        field = torch.sin(grid[:, None] + i * 0.3) * torch.cos(grid[None, :] - i * 0.2)
        mask = (torch.rand(size, size) < 0.2).float()
        tasks.append({"context": field[None], "context_mask": mask[None], "target": field[None]})
    return tasks


if __name__ == "__main__":
    torch.manual_seed(0)
    np.random.seed(0)
    model = ConvNP()
    train_tasks = make_tasks()
    for epoch in range(4):
        batch_losses = train_epoch(model, train_tasks, batch_size=4)
        print("epoch", epoch, "loss", round(float(np.mean(batch_losses)), 4))
