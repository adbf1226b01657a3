"""The book's shared helpers: a masked cross-entropy, gradient clipping and the seq2seq training loop."""
import torch
from torch import nn


def sequence_mask(X, valid_len, value=0):
    positions = torch.arange(X.size(1))[None, :]
    X[~(positions < valid_len[:, None])] = value
    return X


class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    def forward(self, pred, label, valid_len):
        weights = sequence_mask(torch.ones_like(label, dtype=torch.float32), valid_len)
        self.reduction = "none"
        unweighted = super().forward(pred.permute(0, 2, 1), label)
        return (unweighted * weights).mean(dim=1)


def grad_clipping(net, theta):
    params = [p for p in net.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum(p.grad ** 2) for p in params))
    scale = (theta / norm).clamp(max=1.0)  # a tensor: no host sync to decide
    for param in params:
        param.grad.mul_(scale)


def train_seq2seq(net, data_iter, lr, num_epochs, bos_index):
    net.train()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    loss = MaskedSoftmaxCELoss()
    for epoch in range(num_epochs):
        total, tokens = torch.zeros(()), torch.zeros((), dtype=torch.long)
        for batch in data_iter:
            optimizer.zero_grad()
            X, X_valid_len, Y, Y_valid_len = batch
            bos = torch.full((Y.shape[0], 1), bos_index)
            dec_input = torch.cat([bos, Y[:, :-1]], 1)  # teacher forcing
            Y_hat, _ = net(X, dec_input, X_valid_len)
            l = loss(Y_hat, Y, Y_valid_len)
            l.sum().backward()
            grad_clipping(net, 1)
            optimizer.step()
            with torch.no_grad():
                total += l.sum()
                tokens += Y_valid_len.sum()
        print(f"epoch {epoch}: loss {float(total / tokens):.3f} per token")
