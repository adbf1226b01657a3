"""Train a multi-label head with the asymmetric loss on pooled backbone features (80 labels, few positive)."""
import torch
import torch.nn as nn

from losses import AsymmetricLoss

N_LABELS, FEATURES = 80, 512


def make_batches(n_batches=6, batch_size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    prototypes = torch.rand(N_LABELS, FEATURES, generator=g) * 20
    batches = []
    for _ in range(n_batches):
        targets = (torch.rand(batch_size, N_LABELS, generator=g) < 0.04).float()
        # pooled backbone features, not normalised: non-negative and large, larger with more objects
        features = targets @ prototypes + torch.rand(batch_size, FEATURES, generator=g)
        batches.append((features, targets))
    return batches


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, N_LABELS))
criterion = AsymmetricLoss(gamma_neg=4, gamma_pos=1, clip=0.05)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for step, (features, targets) in enumerate(make_batches()):
        output = model(features)
        loss = criterion(output, targets)  # BUG TRN904
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "last loss", round(loss.item(), 3))
