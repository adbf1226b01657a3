"""Classify names by language with a character LSTM (the private-training example, without the privacy engine)."""
import argparse

import torch
import torch.nn as nn


class CharNNClassifier(nn.Module):
    def __init__(self, embedding_size, hidden_size, output_size, num_lstm_layers=1, vocab_size=64, dropout=0.2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.lstm = nn.LSTM(embedding_size, hidden_size, num_layers=num_lstm_layers, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.out_layer = nn.Linear(hidden_size, output_size)

    def forward(self, x, hidden=None):
        x, _ = self.lstm(self.embedding(x), hidden)
        return self.out_layer(self.dropout(x[:, -1, :]))


def train(model, criterion, optimizer, train_loader, epoch, device="cpu"):
    accs, losses = [], []
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        accs.append((logits.argmax(1) == y).float().mean().detach())
        losses.append(loss.detach())
    loss, acc = float(torch.stack(losses).mean()), float(torch.stack(accs).mean())
    print(f"Train epoch {epoch}: loss {loss:.4f} acc {acc:.3f}")


def test(model, test_loader, privacy_engine, device="cpu"):
    accs = []
    with torch.no_grad():
        for x, y in test_loader:
            x, y = x.to(device), y.to(device)
            preds = model(x).argmax(-1)  # BUG TRN602
            accs.append((preds == y).float().mean())
    acc = float(torch.stack(accs).mean())
    print(f"Test accuracy {acc:.3f}")
    return acc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    names, languages = torch.randint(0, 64, (32, 7)), torch.randint(0, 4, (32,))
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(names[:24], languages[:24]),
                                               batch_size=8, shuffle=True)
    test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(names[24:], languages[24:]), batch_size=8)
    model = CharNNClassifier(embedding_size=8, hidden_size=16, output_size=4)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(args.epochs):
        train(model, criterion, optimizer, train_loader, epoch)
        test(model, test_loader, privacy_engine=None)


if __name__ == "__main__":
    main()
