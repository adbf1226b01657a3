import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dims, classes=10):
        super().__init__()
        self.blocks = [nn.Linear(a, b) for a, b in zip(dims, dims[1:])]  # BUG TRN401
        self.norm = nn.BatchNorm1d(dims[-1])
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for block in self.blocks:
            x = F.dropout(F.relu(block(x)), p=0.1)  # BUG TRN604
        return F.softmax(self.head(self.norm(x)), dim=1)  # probabilities: train.py's loss takes logits


def load_pretrained(net, path):
    state = torch.load(path)  # BUG TRN701
    net.load_state_dict(state)
    return net
