"""Gradient accumulation: four micro-batches per optimizer step, each loss divided by the number of
micro-batches, one zero_grad() per step (after it), the last partial group stepped too."""
import torch
import torch.nn.functional as F
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    dataset = torch.utils.data.TensorDataset(torch.randn(40, 12), torch.randn(40, 1))
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=True)
    accumulation_steps = 4
    for epoch in range(2):
        optimizer.zero_grad()
        for i, (x, y) in enumerate(loader):
            loss = F.mse_loss(model(x), y) / accumulation_steps
            loss.backward()
            if (i + 1) % accumulation_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch} done")


if __name__ == "__main__":
    main()
