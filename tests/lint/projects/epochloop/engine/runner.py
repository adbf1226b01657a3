"""A template trainer: fit() loops over epochs, the subclasses in loops/ say what an epoch is."""
import torch


class EpochRunner:
    def __init__(self, model, loader, epochs):
        self.model = model
        self.loader = loader
        self.epochs = epochs
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.lr_scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=30)

    def fit(self):
        for epoch in range(self.epochs):
            self.lr_scheduler.step()  # BUG TRN801
            self.run_epoch(epoch)

    def run_epoch(self, epoch):
        raise NotImplementedError
