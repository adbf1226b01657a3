import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


class LogNet(Net):
    def forward(self, x):
        return F.log_softmax(super().forward(x), dim=1)
