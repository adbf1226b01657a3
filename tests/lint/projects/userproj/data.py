import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build_loader(batch_size, distributed):
    data = TensorDataset(torch.randn(256, 32), torch.randint(0, 10, (256,)))
    sampler = DistributedSampler(data)  # its loader goes to main.py, used every epoch with no set_epoch
    return DataLoader(data, batch_size=batch_size, sampler=sampler)
