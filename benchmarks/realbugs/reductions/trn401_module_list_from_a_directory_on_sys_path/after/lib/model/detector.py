# realbug-expected: TRN401 shape=cross-file case=detectorch-trn401-eadb118-detector
import torch
from model.proposals import AnchorHead  # lib/ is on sys.path when the scripts run


class Detector(torch.nn.Module):
    def __init__(self, scales):
        super().__init__()
        self.heads = torch.nn.ModuleList([AnchorHead(s) for s in scales])

    def forward(self, feats):
        return [head(f) for head, f in zip(self.heads, feats)]
