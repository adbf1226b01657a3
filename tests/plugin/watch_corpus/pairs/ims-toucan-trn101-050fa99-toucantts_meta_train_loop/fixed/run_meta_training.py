import random

import torch
from torch import nn

from toucantts_meta_train_loop import train_loop


class TinyToucan(nn.Module):
    def __init__(self, n_languages=6, dim=8):
        super().__init__()
        self.language_embedding = nn.Embedding(n_languages, dim)
        self.encoder = nn.Linear(dim, dim)
        self.decoder = nn.Linear(dim, 5)

    def forward(self, text, language):
        return self.decoder(torch.tanh(self.encoder(text + self.language_embedding(language))))


random.seed(0)
torch.manual_seed(0)
n_languages = 6
distances = torch.rand(n_languages, n_languages)
distances = (distances + distances.T) / 2
distances.fill_diagonal_(0)
datasets = [[(torch.randn(4, 8), torch.randn(4, 5)) for _ in range(3)] for _ in range(2)]
train_loop(TinyToucan(n_languages), datasets, list(range(n_languages)), distances)
