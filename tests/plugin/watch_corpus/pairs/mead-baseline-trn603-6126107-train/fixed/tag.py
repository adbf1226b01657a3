import torch
from torch import nn

from train import fit


class RNNTaggerModel(nn.Module):
    def __init__(self, vocab=30, dim=16, n_tags=5, pdrop=0.3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.dropout = nn.Dropout(pdrop)
        self.rnn = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * dim, n_tags)

    def forward(self, x):
        out, _ = self.rnn(self.dropout(self.embed(x)))
        return self.proj(self.dropout(out))


torch.manual_seed(0)
words, tags = torch.randint(0, 30, (16, 6)), torch.randint(0, 5, (16, 6))
ts = [(words[i:i + 4], tags[i:i + 4]) for i in range(0, 12, 4)]
vs = [(words[12:], tags[12:])]
fit(RNNTaggerModel(), ts, vs)
