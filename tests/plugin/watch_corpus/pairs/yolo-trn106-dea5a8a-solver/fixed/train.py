import torch
from torch import nn

from solver import ModelTrainer

torch.manual_seed(0)
n_classes = 3
images = torch.randn(30, 16)
targets = torch.cat([torch.rand(30, 5), torch.randint(0, n_classes, (30, 1)).float()], 1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, targets), batch_size=6)
model = nn.Sequential(nn.Linear(16, 32), nn.SiLU(), nn.Linear(32, 5 + n_classes))
ModelTrainer(model).solve(loader, epochs=2)
