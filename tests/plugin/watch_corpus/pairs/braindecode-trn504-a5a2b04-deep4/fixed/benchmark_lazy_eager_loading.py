"""Train a deep ConvNet on synthetic EEG windows with a plain PyTorch loop, timing the epochs."""
import time

import numpy as np
import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

from deep4 import Deep4Net


def make_windows(n_windows=96, n_chans=4, n_times=120, n_classes=4, sfreq=100.0):
    """Each class oscillates at its own frequency in a few channels, under noise."""
    t = torch.arange(n_times) / sfreq
    y = torch.randint(0, n_classes, (n_windows,))
    freqs = 6.0 + 4.0 * y.float()
    signal = torch.sin(2 * np.pi * freqs[:, None] * t[None, :])
    X = 0.8 * torch.randn(n_windows, n_chans, n_times)
    X[:, : n_chans // 2] += signal[:, None, :]
    return TensorDataset(X, y, torch.arange(n_windows))


def get_model(n_channels, n_classes, window_len_samples):
    model = Deep4Net(n_channels, n_classes, n_times=window_len_samples)
    optimizer = optim.Adam(model.parameters())
    loss = nn.NLLLoss()
    return model, loss, optimizer


def run_training(model, dataloader, loss, optimizer, n_epochs=1):
    for i in range(n_epochs):
        loss_vals = list()
        for X, y, _ in dataloader:
            model.train()
            model.zero_grad()
            y = y.long()
            loss_val = loss(model(X), y)
            loss_vals.append(loss_val.detach())
            loss_val.backward()
            optimizer.step()
        print(f'Epoch {i + 1} - mean training loss: {torch.stack(loss_vals).mean().item():.4f}')
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    dataset = make_windows()
    dataloader = DataLoader(dataset, batch_size=32, shuffle=True)
    model, loss, optimizer = get_model(n_channels=4, n_classes=4, window_len_samples=120)
    start = time.time()
    run_training(model, dataloader, loss, optimizer, n_epochs=3)
    print(f'training took {time.time() - start:.2f} s')
