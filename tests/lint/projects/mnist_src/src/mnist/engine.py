import torch
from torch import nn

from mnist.model import Net


class Trainer:
    def __init__(self) -> None:
        self.model = Net()
        self.criterion = nn.CrossEntropyLoss()

    def step(self, x, y):
        return self.criterion(self.model(x), y)  # BUG TRN501


def evaluate(model: Net, loader) -> float:
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.nll_loss(model(x), y).item()
    return total
