import torch
from torch import nn

from utils import train


class FrameVAD(nn.Module):
    """Per-frame speech probability from a short window of features."""

    def __init__(self, n_features=10, hidden=16):
        super().__init__()
        self.rnn = nn.LSTM(n_features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return torch.sigmoid(self.head(out)).squeeze(-1)


torch.manual_seed(0)
config = {"epochs": 2, "lr": 1e-3}
frames = torch.randn(24, 6, 10)
targets = (frames.mean(-1) > 0).float()
masks = torch.ones(24, 6)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(frames, targets, masks), batch_size=8)
model = FrameVAD()
criterion = nn.BCELoss(reduction="none")
optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
for epoch in range(config["epochs"]):
    print(f"epoch {epoch}: train loss {float(train(config, loader, model, criterion, optimizer)):.4f}")
