import torch
from torch import nn

from trainer import BYOLTrainer

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 10))
images = torch.utils.data.TensorDataset(torch.randn(32, 12))
trainer = BYOLTrainer(encoder, feat_dim=10, dataset=images)
trainer()
print("final loss", float(trainer.history[-1]))
