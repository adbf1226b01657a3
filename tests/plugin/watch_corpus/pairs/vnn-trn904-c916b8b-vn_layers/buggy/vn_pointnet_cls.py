"""A rotation-equivariant PointNet classifier built from vector neuron layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from vn_layers import VNLinearLeakyReLU, mean_pool


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    return (-xx - inner - xx.transpose(2, 1)).topk(k=k, dim=-1)[1]  # (batch, points, k)


def get_graph_feature_cross(x, k):
    """Per point and neighbour: the offset to the neighbour, the point itself and their cross product."""
    batch_size, num_points = x.size(0), x.size(3)
    x = x.view(batch_size, -1, num_points)
    idx = (knn(x, k) + torch.arange(batch_size).view(-1, 1, 1) * num_points).view(-1)
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :].view(batch_size, num_points, k, 1, 3)
    x = x.view(batch_size, num_points, 1, 1, 3).repeat(1, 1, k, 1, 1)
    cross = torch.cross(feature, x, dim=-1)
    return torch.cat((feature - x, x, cross), dim=3).permute(0, 3, 4, 1, 2).contiguous()


class PointNetEncoder(nn.Module):
    def __init__(self, n_knn=8, channels=(21, 42)):
        super().__init__()
        self.n_knn = n_knn
        self.conv_pos = VNLinearLeakyReLU(3, channels[0], dim=5, negative_slope=0.0)
        self.conv1 = VNLinearLeakyReLU(channels[0], channels[1], dim=4, negative_slope=0.0)
        self.pool = mean_pool

    def forward(self, x):
        feat = get_graph_feature_cross(x.unsqueeze(1), k=self.n_knn)
        x = self.pool(self.conv_pos(feat))
        x = self.conv1(x)
        # rotation-invariant features: each vector projected on its channel's mean vector
        x_mean = x.mean(dim=-1, keepdim=True)
        return (x * x_mean).sum(2).max(dim=-1)[0]


class get_model(nn.Module):
    def __init__(self, num_class=4):
        super().__init__()
        self.feat = PointNetEncoder()
        self.fc1 = nn.Linear(42, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, num_class)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(self.feat(x))))
        return F.log_softmax(self.fc2(x), dim=1)


class get_loss(nn.Module):
    def forward(self, pred, target):
        return F.nll_loss(pred, target)
