"""Checkpointing: train with a warm-up + cosine schedule, save model, optimizer, scheduler and epoch, load
them back with torch.load(weights_only=True) into fresh objects, and resume where training stopped."""
import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn


def build(lr=0.1, total_steps=12, warmup=3):
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    warm = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=warmup)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps - warmup)
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warm, cosine], milestones=[warmup])
    return model, optimizer, scheduler


def train_epochs(model, optimizer, scheduler, batches, epochs):
    model.train()
    for _ in range(epochs):
        for x, y in batches:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            scheduler.step()


def main():
    torch.manual_seed(0)
    x, y = torch.randn(16, 6), torch.randint(0, 2, (16,))
    batches = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 16, 4)]
    model, optimizer, scheduler = build()
    train_epochs(model, optimizer, scheduler, batches, epochs=1)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save({"epoch": 1, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()}, path)
        checkpoint = torch.load(path, weights_only=True)
    resumed, resumed_optimizer, resumed_scheduler = build()
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed_scheduler.load_state_dict(checkpoint["scheduler"])
    train_epochs(resumed, resumed_optimizer, resumed_scheduler, batches, epochs=2)
    print(f"resumed from epoch {checkpoint['epoch']}, lr now {resumed_scheduler.get_last_lr()[0]:.4f}")


if __name__ == "__main__":
    main()
