# realbug-expected: TRN302 shape=container case=dalle-pytorch-trn302-724e11e-train_dalle
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def run(backend, dataset, model, opt, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    net, optim, batches = backend.wrap(model, opt, loader)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in batches:
            loss = net(x, y)
            loss.backward()
            optim.step()
            optim.zero_grad()
