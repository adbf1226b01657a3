from torch import nn


class Discriminator(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        # a comment that differs from the buggy twin's model.py
        return self.body(x)
