import torch
from torch import nn

from trainer import ContrastiveLossTrainer

torch.manual_seed(0)
points = torch.randn(24, 3)
pairs = torch.utils.data.TensorDataset(points, points + 0.01 * torch.randn_like(points))
train_loader = torch.utils.data.DataLoader(torch.utils.data.Subset(pairs, range(16)), batch_size=4, shuffle=True)
val_loader = torch.utils.data.DataLoader(torch.utils.data.Subset(pairs, range(16, 24)), batch_size=4)
model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 8))
config = {"max_epoch": 2, "val_epoch_freq": 1, "lr": 0.1, "exp_gamma": 0.99}
trainer = ContrastiveLossTrainer(model, config, train_loader, val_loader)
trainer.train()
print("best hit ratio", trainer.best_val)
