# realbug-expected: TRN502 shape=cross-file case=min-lstm-torch-trn502-fb8219d-train
import torch
import torch.nn as nn
from net import TinyRNN


def fit(loader, epochs):
    model = TinyRNN(32)
    opt = torch.optim.Adam(model.parameters())
    criterion = nn.BCELoss()
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            criterion(model(x).squeeze(1), y).backward()
            opt.step()
