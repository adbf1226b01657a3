import torch
from torch import nn

from .model import Discriminator


def train(loader, epochs: int = 1) -> None:
    disc = Discriminator().to("cpu")
    criterion = nn.BCELoss()
    opt = torch.optim.Adam(disc.parameters())
    for _ in range(epochs):
        for real, labels in loader:
            opt.zero_grad()
            loss = criterion(disc(real).view(-1), labels)  # BUG TRN502
            loss.backward()
            opt.step()
