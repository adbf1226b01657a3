import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dims, classes=10):
        super().__init__()
        self.blocks = [nn.Linear(a, b) for a, b in zip(dims, dims[1:])]  # BUG TRN401
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for block in self.blocks:
            x = F.dropout(F.relu(block(x)), p=0.1)  # BUG TRN604
        return self.head(x)


def load_pretrained(net, path):
    state = torch.load(path)  # BUG TRN701
    net.load_state_dict(state)
    return net
