"""A pocket SSD: a BatchNorm backbone and per-location box and class heads."""
from torch import nn


class SSD300(nn.Module):
    def __init__(self, label_num=4, n_boxes=4):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                               nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.loc = nn.Conv2d(8, n_boxes * 4, 3, padding=1)
        self.conf = nn.Conv2d(8, n_boxes * label_num, 3, padding=1)
        self.label_num = label_num

    def forward(self, x):
        f = self.feature_extractor(x)
        batch = x.size(0)
        return self.loc(f).view(batch, 4, -1), self.conf(f).view(batch, self.label_num, -1)


class Loss(nn.Module):
    def forward(self, ploc, plabel, gloc, glabel):
        return nn.functional.smooth_l1_loss(ploc, gloc) + nn.functional.cross_entropy(plabel, glabel)
