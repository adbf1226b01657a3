"""SimCLR: two augmented views per image, NT-Xent loss between their projections."""
import random

import torch
import torch.nn.functional as F
from torch import nn


class ResNetSimCLR(nn.Module):
    def __init__(self, out_dim=8):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.l1 = nn.Linear(8, 8)
        self.l2 = nn.Linear(8, out_dim)

    def forward(self, x):
        h = self.features(x)
        return h, self.l2(F.relu(self.l1(h)))


def augment(x):
    return x.flip(-1) if random.random() < 0.5 else x + 0.05 * torch.randn_like(x)


def nt_xent(zis, zjs, temperature=0.5):
    z = F.normalize(torch.cat([zjs, zis]), dim=1)
    similarity = z @ z.T / temperature
    n = zis.shape[0]
    similarity.fill_diagonal_(float("-inf"))
    labels = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(similarity, labels)


random.seed(0)
torch.manual_seed(0)
config = {"epochs": 2, "batch_size": 4}
images = torch.randn(12, 3, 8, 8)
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), batch_size=config["batch_size"],
                                           shuffle=True, drop_last=True)
model = ResNetSimCLR(out_dim=8)
optimizer = torch.optim.Adam(model.parameters(), 3e-4)

for e in range(config["epochs"]):
    for step, (x,) in enumerate(train_loader):
        xis, xjs = augment(x), augment(x)
        _, zis = model(xis)
        _, zjs = model(xjs)
        loss = nt_xent(zis, zjs)
        loss.backward()
        optimizer.step()  # BUG TRN102
    print("epoch", e, "done")
