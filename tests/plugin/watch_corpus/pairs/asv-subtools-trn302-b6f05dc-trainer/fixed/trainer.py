"""A speaker-embedding trainer whose parts travel in one dict of elements."""
import torch
from torch.utils.data.distributed import DistributedSampler


class SimpleTrainer:
    def __init__(self, package):
        model, optimizer, lr_scheduler = package["model"], package["optimizer"], package["lr_scheduler"]
        self.elements = {"model": model, "optimizer": optimizer, "lr_scheduler": lr_scheduler,
                         "model_forward": lambda batch: model(batch[0])}
        self.params = package["params"]
        self.training_point = (0, 0, 0)

    def train_one_batch(self, batch):
        model = self.elements["model"]
        optimizer = self.elements["optimizer"]
        model.train()
        loss = torch.nn.functional.cross_entropy(self.elements["model_forward"](batch), batch[1])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    def run(self, data):
        start_epoch, epochs = self.params["start_epoch"], self.params["epochs"]
        lr_scheduler = self.elements["lr_scheduler"]
        base_optimizer = self.elements["optimizer"]
        last_lr = base_optimizer.param_groups[0]["lr"]
        for this_epoch in range(start_epoch, epochs):
            # A new shuffle per epoch, the same on every process
            if isinstance(data.train_loader.sampler, DistributedSampler):
                data.train_loader.sampler.set_epoch(this_epoch)
            for this_iter, batch in enumerate(data.train_loader, 0):
                self.training_point = (this_epoch, this_iter, len(data.train_loader))
                loss = self.train_one_batch(batch)
            lr_scheduler.step()
            current_lr = base_optimizer.param_groups[0]["lr"]
            if current_lr != last_lr:
                print(f"epoch {this_epoch}: learning rate {last_lr} -> {current_lr}")
                last_lr = current_lr
        return loss
