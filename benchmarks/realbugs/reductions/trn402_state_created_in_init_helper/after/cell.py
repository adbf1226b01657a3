# realbug-expected: TRN402 shape=helper case=xlstm-pytorch-trn402-82ff081-mlstmblock
import torch
import torch.nn as nn


class GatedCell(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.gate = nn.Linear(width, width)
        self.register_buffer("carry", torch.zeros(1, width))

    def forward(self, x):
        return torch.sigmoid(self.gate(x)) * self.carry
