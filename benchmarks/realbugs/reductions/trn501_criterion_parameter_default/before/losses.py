# realbug-expected: TRN501 shape=container case=graph_neural_net-trn501-62c6240-losses
import torch
import torch.nn as nn


class MatchingLoss(nn.Module):
    def __init__(self, criterion=nn.CrossEntropyLoss()):
        super().__init__()
        self.criterion = criterion

    def forward(self, scores, target):
        return self.criterion(torch.softmax(scores, -1), target)
