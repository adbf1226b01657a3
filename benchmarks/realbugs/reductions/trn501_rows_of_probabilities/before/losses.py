# realbug-expected: TRN501 shape=container case=graph_neural_net-trn501-62c6240-losses
import torch
import torch.nn as nn


class RowLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(reduction="sum")

    def forward(self, scores):
        total = 0.0
        for row in torch.softmax(scores, -1):
            total = total + self.criterion(row, torch.arange(row.shape[0]))
        return total
