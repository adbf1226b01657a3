"""Image classification: a small CNN on synthetic CIFAR-like images, SGD with momentum and a step schedule,
validation each epoch under eval() and no_grad(), train() restored after it."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, loader):
    model.eval()
    correct = torch.zeros((), dtype=torch.long)
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum()
    model.train()
    return correct / len(loader.dataset)


def main():
    torch.manual_seed(0)
    images, labels = torch.randn(48, 3, 8, 8), torch.randint(0, 10, (48,))
    train_loader = DataLoader(TensorDataset(images[:32], labels[:32]), batch_size=8, shuffle=True)
    val_loader = DataLoader(TensorDataset(images[32:], labels[32:]), batch_size=8)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    model.train()
    for epoch in range(2):
        running = torch.zeros(())
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        scheduler.step()
        accuracy = evaluate(model, val_loader)
        print(f"epoch {epoch}: loss {float(running) / len(train_loader):.3f} val acc {float(accuracy):.3f}")


if __name__ == "__main__":
    main()
