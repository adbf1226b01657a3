# realbug-expected: TRN401 shape=container case=texar-pytorch-trn401-57ad85d-layers
from typing import List, Optional

import torch
import torch.nn as nn


class Parallel(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.branches: Optional[nn.ModuleList] = None
        if layers:
            self.branches = nn.ModuleList()
            for layer in layers:
                if isinstance(layer, nn.Module):
                    self.branches.append(layer)

    def forward(self, x):
        return torch.cat([b(x) for b in self.branches], dim=-1)
