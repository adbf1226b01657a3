import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from trainer import SimpleTrainer


class Egs:
    """The training examples and their loader, sharded as each process's share."""

    def __init__(self, features, labels, batch_size, world_size=1, rank=0):
        dataset = TensorDataset(features, labels)
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
        self.train_loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)


torch.manual_seed(0)
n_speakers = 4
data = Egs(torch.randn(24, 20), torch.randint(0, n_speakers, (24,)), batch_size=6)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.BatchNorm1d(32), nn.Linear(32, n_speakers))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
package = {"model": model, "optimizer": optimizer,
           "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5),
           "params": {"start_epoch": 0, "epochs": 2}}
SimpleTrainer(package).run(data)
