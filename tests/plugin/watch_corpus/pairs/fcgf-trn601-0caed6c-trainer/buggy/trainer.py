"""A metric-learning trainer for point features: contrastive training, hit-ratio validation."""
import torch
import torch.nn.functional as F


class ContrastiveLossTrainer:
    def __init__(self, model, config, data_loader, val_data_loader=None):
        self.model = model
        self.config = config
        self.max_epoch = config["max_epoch"]
        self.val_epoch_freq = config["val_epoch_freq"]
        self.test_valid = val_data_loader is not None
        self.data_loader, self.val_data_loader = data_loader, val_data_loader
        self.optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.8)
        self.scheduler = torch.optim.lr_scheduler.ExponentialLR(self.optimizer, config["exp_gamma"])
        self.best_val = -float("inf")
        self.best_val_metric = "hit_ratio"
        self.history = []

    def train(self):
        # Baseline random feature performance
        if self.test_valid:
            val_dict = self._valid_epoch()
            self.history.append((0, val_dict))
        for epoch in range(1, self.max_epoch + 1):
            self._train_epoch(epoch)
            self.scheduler.step()
            if self.test_valid and epoch % self.val_epoch_freq == 0:
                val_dict = self._valid_epoch()
                self.history.append((epoch, val_dict))
                if self.best_val < val_dict[self.best_val_metric]:
                    self.best_val = val_dict[self.best_val_metric]

    def _train_epoch(self, epoch):
        self.model.train()
        for xyz0, xyz1 in self.data_loader:
            self.optimizer.zero_grad()
            F0, F1 = self.model(xyz0), self.model(xyz1)
            positive = (F0 - F1).pow(2).sum(1)
            negative = F.relu(1.0 - (F0 - F1.roll(1, 0)).pow(2).sum(1).clamp_min(1e-7).sqrt()).pow(2)
            loss = positive.mean() + negative.mean()
            loss.backward()
            self.optimizer.step()

    def _valid_epoch(self):
        self.model.eval()
        hits, total = torch.zeros(()), 0
        for xyz0, xyz1 in self.val_data_loader:
            F0 = self.model(xyz0)  # BUG TRN601
            F1 = self.model(xyz1)  # BUG TRN601
            nearest = torch.cdist(F0, F1).argmin(1)
            hits += (nearest == torch.arange(len(F0))).sum()
            total += len(F0)
        self.model.train()
        return {"hit_ratio": float(hits / total)}
