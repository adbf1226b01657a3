"""Train a text classifier on every process (torchrun), then save the final model."""
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from model import TextClassifier


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


class ModelTrainer:
    def __init__(self, model, corpus):
        self.model, self.corpus = model, corpus

    def train(self, base_path, max_epochs=2, learning_rate=0.1, mini_batch_size=4):
        ddp = DistributedDataParallel(self.model) if dist.is_initialized() else self.model
        optimizer = torch.optim.SGD(ddp.parameters(), lr=learning_rate)
        sampler = DistributedSampler(self.corpus, shuffle=True) if dist.is_initialized() else None
        loader = DataLoader(self.corpus, batch_size=mini_batch_size, sampler=sampler, shuffle=sampler is None)
        for epoch in range(max_epochs):
            if sampler is not None:
                sampler.set_epoch(epoch)
            for tokens, labels in loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(ddp(tokens), labels)
                loss.backward()
                optimizer.step()
        self.model.save(os.path.join(base_path, "final-model.pt"))


if __name__ == "__main__":
    if dist.is_torchelastic_launched():
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    base_path = [tempfile.mkdtemp() if is_main_process() else None]
    if dist.is_initialized():
        dist.broadcast_object_list(base_path)  # one folder for all processes
    corpus = TensorDataset(torch.randint(0, 50, (16, 6)), torch.randint(0, 3, (16,)))
    ModelTrainer(TextClassifier(), corpus).train(base_path[0])
    if dist.is_initialized():
        dist.barrier()
    if is_main_process():
        shutil.rmtree(base_path[0])
    if dist.is_initialized():
        dist.destroy_process_group()
