from torch import nn


class Discriminator(nn.Module):  # same name, other module: not the one train.py imports
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 1), nn.Sigmoid())

    def forward(self, x):
        return self.body(x)
