# realbug-expected: TRN302 shape=container case=parallelwavegan-trn302-dc592cc-train
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Loop:
    def __init__(self, loaders, samplers, step_fn):
        self.loaders, self.samplers, self.step_fn = loaders, samplers, step_fn

    def fit(self, n_epochs):
        for epoch in range(n_epochs):
            for batch in self.loaders["train"]:
                self.step_fn(batch)


def main(train_set, step_fn):
    samplers = {"train": DistributedSampler(train_set)}
    loaders = {"train": DataLoader(train_set, batch_size=8, sampler=samplers["train"])}
    Loop(loaders, samplers, step_fn).fit(10)
