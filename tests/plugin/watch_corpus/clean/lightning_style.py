"""A Lightning-style program: the module says what a step is (training_step, validation_step,
configure_optimizers) and a tiny trainer owns the loop: zero_grad/backward/step, the scheduler's interval,
eval mode and no_grad around validation, train mode restored."""
import torch
import torch.nn.functional as F
from torch import nn


class LitRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return F.l1_loss(self(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"}}


class TinyTrainer:
    def __init__(self, max_epochs=2, gradient_clip_val=None):
        self.max_epochs, self.gradient_clip_val = max_epochs, gradient_clip_val
        self.logged = []

    def fit(self, module, train_dataloader, val_dataloader):
        config = module.configure_optimizers()
        optimizer, scheduler = config["optimizer"], config["lr_scheduler"]["scheduler"]
        for epoch in range(self.max_epochs):
            module.train()
            for batch_idx, batch in enumerate(train_dataloader):
                loss = module.training_step(batch, batch_idx)
                optimizer.zero_grad()
                loss.backward()
                if self.gradient_clip_val:
                    torch.nn.utils.clip_grad_norm_(module.parameters(), self.gradient_clip_val)
                optimizer.step()
            scheduler.step()
            self.logged.append(self.validate(module, val_dataloader))
        return self.logged

    @torch.no_grad()
    def validate(self, module, val_dataloader):
        module.eval()
        losses = [module.validation_step(batch, i) for i, batch in enumerate(val_dataloader)]
        module.train()
        return torch.stack(losses).mean()


def main():
    torch.manual_seed(0)
    x = torch.randn(48, 8)
    y = x.sum(1, keepdim=True)
    train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[:32], y[:32]), batch_size=8, shuffle=True)
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[32:], y[32:]), batch_size=8)
    logged = TinyTrainer(max_epochs=2, gradient_clip_val=1.0).fit(LitRegressor(), train, val)
    print("val l1 per epoch", [round(float(v), 3) for v in logged])


if __name__ == "__main__":
    main()
