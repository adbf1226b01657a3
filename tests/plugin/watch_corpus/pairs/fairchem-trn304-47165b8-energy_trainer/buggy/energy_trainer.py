"""Train a model to predict a structure's relaxed energy; keep the checkpoint of the best validation MAE."""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import utils


class EnergyTrainer:
    def __init__(self, model, train_dataset, val_dataset, checkpoint_dir, is_debug=False):
        self.model = DistributedDataParallel(model) if dist.is_initialized() else model
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.train_sampler = DistributedSampler(train_dataset, shuffle=True) if dist.is_initialized() else None
        self.train_loader = DataLoader(train_dataset, batch_size=4, sampler=self.train_sampler,
                                       shuffle=self.train_sampler is None)
        self.val_loader = DataLoader(val_dataset, batch_size=4)
        self.checkpoint_dir = checkpoint_dir
        self.is_debug = is_debug
        self.best_val_mae = float("inf")

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        errors = [(self.model(x).squeeze(-1) - y).abs() for x, y in self.val_loader]
        self.model.train()
        mae = torch.cat(errors).mean()
        if dist.is_initialized():
            dist.all_reduce(mae)
            mae /= dist.get_world_size()
        return {"energy_mae": {"metric": float(mae)}}

    def train(self, max_epochs=2):
        for epoch in range(max_epochs):
            if self.train_sampler is not None:
                self.train_sampler.set_epoch(epoch)
            self.model.train()
            for x, y in self.train_loader:
                loss = F.l1_loss(self.model(x).squeeze(-1), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            val_metrics = self.validate()
            if val_metrics["energy_mae"]["metric"] < self.best_val_mae:
                self.best_val_mae = val_metrics["energy_mae"]["metric"]
                if not self.is_debug:
                    utils.save_checkpoint({"epoch": epoch + 1, "state_dict": self.model.state_dict(),
                                           "optimizer": self.optimizer.state_dict(),
                                           "best_val_mae": self.best_val_mae}, self.checkpoint_dir)
