"""Train the ACGAN on synthetic class-coded digits with a minimal Lightning-style trainer loop."""
import numpy as np
import torch

from acgan import ACGAN


class Trainer:
    """Runs training_step once per optimizer for every batch, as Lightning's automatic optimization does."""

    def __init__(self, max_epochs=2):
        self.max_epochs = max_epochs

    def fit(self, model, batches):
        optimizers, _ = model.configure_optimizers()
        model.train()
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(batches):
                for optimizer_idx, optimizer in enumerate(optimizers):
                    optimizer.zero_grad()
                    loss = model.training_step(batch, batch_idx, optimizer_idx)
                    loss.backward()
                    optimizer.step()
            print("epoch", epoch, "last loss", round(loss.item(), 4))


def make_batches(n_batches=3, batch_size=8, n_classes=10):
    batches = []
    for _ in range(n_batches):
        labels = torch.randint(0, n_classes, (batch_size,))
        imgs = torch.tanh(torch.randn(batch_size, 1, 16, 16) + labels.view(-1, 1, 1, 1) / n_classes)
        batches.append((imgs, labels))
    return batches


if __name__ == "__main__":
    torch.manual_seed(0)
    np.random.seed(0)
    Trainer(max_epochs=2).fit(ACGAN(), make_batches())
