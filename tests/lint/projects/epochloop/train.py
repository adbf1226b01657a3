import torch

from engine.steps import SharedSteps


class Trainer(SharedSteps):
    def __init__(self, model, loader, epochs):
        self.model = model
        self.loader = loader
        self.epochs = epochs
        self.optimizer = torch.optim.Adam(model.parameters())
        self.scheduler = torch.optim.lr_scheduler.ExponentialLR(self.optimizer, gamma=0.9)

    def train(self):
        for epoch in range(self.epochs):
            self.scheduler.step()  # BUG TRN801
            self.train_one_epoch(self.loader)

    def finetune(self, batches):
        for x, y in batches:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.forget_grads()  # BUG TRN101
            self.optimizer.step()

    def warmup(self, batches):
        for x, y in batches:
            torch.nn.functional.mse_loss(self.model(x), y).backward()
            self.apply_update()  # BUG TRN102
