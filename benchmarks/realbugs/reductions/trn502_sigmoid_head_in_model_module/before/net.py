import torch
import torch.nn as nn


class TinyRNN(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.rnn = nn.GRU(16, width, batch_first=True)
        self.fc = nn.Linear(width, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(self.rnn(x)[0][:, -1]))
