"""A self-supervised BYOL learner and the small trainer class that drives it."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


def mlp(dim_in, dim_out, hidden=16):
    return nn.Sequential(nn.Linear(dim_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, dim_out))


class BYOL(nn.Module):
    def __init__(self, encoder, feat_dim, proj_dim=8, decay=0.99):
        super().__init__()
        self.online = nn.Sequential(encoder, mlp(feat_dim, proj_dim))
        self.predictor = mlp(proj_dim, proj_dim)
        self.target = copy.deepcopy(self.online)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def update_moving_average(self):
        for t, o in zip(self.target.parameters(), self.online.parameters()):
            t.mul_(self.decay).add_(o, alpha=1 - self.decay)

    @staticmethod
    def regression(p, z):
        return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1)

    def forward(self, x):
        view1 = x + 0.1 * torch.randn_like(x)
        view2 = x.flip(-1) + 0.1 * torch.randn_like(x)
        p1, p2 = self.predictor(self.online(view1)), self.predictor(self.online(view2))
        with torch.no_grad():
            z1, z2 = self.target(view1), self.target(view2)
        return (self.regression(p1, z2) + self.regression(p2, z1)).mean()


class BYOLTrainer:
    def __init__(self, encoder, feat_dim, dataset, batch_size=8, lr=3e-3, epochs=2):
        self.byol = BYOL(encoder, feat_dim)
        self.optimizer = torch.optim.Adam(p for p in self.byol.parameters() if p.requires_grad)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)
        self.epochs = epochs
        self.history = []

    def __call__(self):
        for _ in range(self.epochs):
            for (images,) in self.loader:
                loss = self.byol(images)
                loss.backward()
                self.history.append(loss.detach())

                self.optimizer.zero_grad()  # BUG TRN101
                self.optimizer.step()

                self.byol.update_moving_average()
