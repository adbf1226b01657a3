"""Train the vector neuron classifier on small shapes whose clouds the loader pads to a fixed size with zeros."""
import math

import torch

from vn_pointnet_cls import get_loss, get_model

NUM_POINT = 64


def sample_shape(label, n, g):
    u = torch.rand(n, generator=g) * 2 * math.pi
    v = torch.rand(n, generator=g) * 2 - 1
    if label == 0:  # sphere
        r = torch.sqrt(1 - v ** 2)
        pts = torch.stack([r * torch.cos(u), r * torch.sin(u), v], dim=1)
    elif label == 1:  # cylinder
        pts = torch.stack([torch.cos(u), torch.sin(u), v], dim=1)
    elif label == 2:  # cone
        r = (1 - v) / 2
        pts = torch.stack([r * torch.cos(u), r * torch.sin(u), v], dim=1)
    else:  # flat disc
        r = torch.sqrt(torch.rand(n, generator=g))
        pts = torch.stack([r * torch.cos(u), r * torch.sin(u), 0.05 * v], dim=1)
    return pts + 0.01 * torch.randn(n, 3, generator=g)


def load_dataset(n_clouds=48, seed=0):
    """Scans with fewer than NUM_POINT points are padded with zeros to NUM_POINT, as the loader did."""
    g = torch.Generator().manual_seed(seed)
    clouds, labels = [], []
    for i in range(n_clouds):
        label = i % 4
        n = int(torch.randint(40, NUM_POINT + 1, (1,), generator=g))
        cloud = torch.zeros(NUM_POINT, 3)
        cloud[:n] = sample_shape(label, n, g)
        clouds.append(cloud.T)
        labels.append(label)
    return torch.stack(clouds), torch.tensor(labels)


torch.manual_seed(0)
points, target = load_dataset()
classifier, criterion = get_model(num_class=4), get_loss()
optimizer = torch.optim.Adam(classifier.parameters(), lr=1e-3)
for epoch in range(2):
    classifier.train()
    order = torch.randperm(len(target))
    for start in range(0, len(order), 8):
        batch = order[start:start + 8]
        optimizer.zero_grad()
        pred = classifier(points[batch])
        loss = criterion(pred, target[batch])
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "last loss", round(loss.item(), 4))
