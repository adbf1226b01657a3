"""Transfer learning: a frozen pretrained backbone (requires_grad off, kept in eval mode, not given to the
optimizer) and a new head trained on top; evaluation in eval mode under no_grad, the head's train mode
restored afterwards."""
import torch
import torch.nn.functional as F
from torch import nn


class Finetuner(nn.Module):
    def __init__(self, backbone, num_classes):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Sequential(nn.Dropout(0.3), nn.Linear(16, num_classes))

    def train(self, mode=True):
        super().train(mode)
        self.backbone.eval()  # frozen: its batch-norm statistics stay the pretrained ones
        return self

    def forward(self, x):
        with torch.no_grad():
            features = self.backbone(x)
        return self.head(features)


def main():
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU())
    for p in backbone.parameters():
        p.requires_grad_(False)
    model = Finetuner(backbone, num_classes=3)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    x, y = torch.randn(40, 12), torch.randint(0, 3, (40,))
    for epoch in range(2):
        model.train()
        for i in range(0, 32, 8):
            optimizer.zero_grad()
            F.cross_entropy(model(x[i:i + 8]), y[i:i + 8]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(x[32:]).argmax(1) == y[32:]).float().mean()
        model.train()
        print(f"epoch {epoch}: held-out accuracy {float(accuracy):.2f}")


if __name__ == "__main__":
    main()
