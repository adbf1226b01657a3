"""Fit a softmax MLP on synthetic MNIST-like features with the classifier wrapper, Adam at a high learning rate."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from classifier import NeuralNetClassifier


class ClassifierModule(nn.Module):
    def __init__(self, input_dim=64, hidden_dim=98, output_dim=10, dropout=0.5):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.hidden = nn.Linear(input_dim, hidden_dim)
        self.output = nn.Linear(hidden_dim, output_dim)

    def forward(self, X):
        X = F.relu(self.hidden(X))
        X = self.dropout(X)
        return F.softmax(self.output(X), dim=-1)


def make_digits(n=400, input_dim=64, n_classes=10):
    """Pixel-like features: each class lights up its own pattern of pixels, plus noise."""
    patterns = (torch.rand(n_classes, input_dim) > 0.7).float()
    y = torch.randint(0, n_classes, (n,))
    X = patterns[y] + 0.3 * torch.randn(n, input_dim)
    return X, y


if __name__ == "__main__":
    torch.manual_seed(0)
    X, y = make_digits()
    net = NeuralNetClassifier(ClassifierModule, max_epochs=3, lr=2.0, optimizer=torch.optim.Adam, batch_size=50)
    net.fit(X, y)
    accuracy = (net.predict_proba(X).argmax(dim=1) == y).float().mean().item()
    print("train accuracy", round(accuracy, 3))
