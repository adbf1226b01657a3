"""Vector neuron layers: every feature is a 3D vector, and each layer commutes with rotations of the input.

Point features have the shape [batch, channels, 3, points, ...].
"""
import torch
import torch.nn as nn

EPS = 1e-6


class VNLinear(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.map_to_feat = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x):
        return self.map_to_feat(x.transpose(1, -1)).transpose(1, -1)


class VNBatchNorm(nn.Module):
    """Batch-normalises the length of each vector and keeps its direction."""

    def __init__(self, num_features, dim):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features) if dim in (3, 4) else nn.BatchNorm2d(num_features)

    def forward(self, x):
        norm = torch.sqrt((x * x).sum(2))
        norm_bn = self.bn(norm)
        return x / norm.unsqueeze(2) * norm_bn.unsqueeze(2)


class VNLinearLeakyReLU(nn.Module):
    def __init__(self, in_channels, out_channels, dim=5, negative_slope=0.2):
        super().__init__()
        self.negative_slope = negative_slope
        self.map_to_feat = nn.Linear(in_channels, out_channels, bias=False)
        self.batchnorm = VNBatchNorm(out_channels, dim=dim)
        self.map_to_dir = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x):
        p = self.map_to_feat(x.transpose(1, -1)).transpose(1, -1)
        p = self.batchnorm(p)  # BUG TRN904
        # the vector leaky ReLU: remove the part of p that points against a learned direction d
        d = self.map_to_dir(x.transpose(1, -1)).transpose(1, -1)
        dot = (p * d).sum(2, keepdim=True)
        mask = (dot >= 0).float()
        d_sq = (d * d).sum(2, keepdim=True)
        projected = p - (dot / (d_sq + EPS)) * d
        return self.negative_slope * p + (1 - self.negative_slope) * (mask * p + (1 - mask) * projected)


def mean_pool(x, dim=-1, keepdim=False):
    return x.mean(dim=dim, keepdim=keepdim)
