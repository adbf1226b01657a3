import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dims, classes=10):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.norm = nn.BatchNorm1d(dims[-1])
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for block in self.blocks:
            x = F.dropout(F.relu(block(x)), p=0.1, training=self.training)
        return self.head(self.norm(x))


def load_pretrained(net, path):
    state = torch.load(path, weights_only=True)
    net.load_state_dict(state)
    return net
