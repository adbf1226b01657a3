from torch import nn


class Discriminator(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.out = nn.Sigmoid()

    def forward(self, x):
        return self.out(self.body(x))
