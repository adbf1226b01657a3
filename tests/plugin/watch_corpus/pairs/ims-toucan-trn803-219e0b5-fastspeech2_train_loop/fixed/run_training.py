import torch
from torch import nn

from fastspeech2_train_loop import train_loop


class TinyFastSpeech2(nn.Module):
    def __init__(self, idim=10, odim=12, dim=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(idim, dim), nn.ReLU(), nn.LayerNorm(dim))
        self.variance_adaptor = nn.Linear(dim, dim)
        self.decoder = nn.Linear(dim, odim)

    def forward(self, text):
        h = self.encoder(text)
        return self.decoder(h + self.variance_adaptor(h))


torch.manual_seed(0)
dataset = torch.utils.data.TensorDataset(torch.randn(16, 7, 10), torch.randn(16, 7, 12))
train_loop(TinyFastSpeech2(), dataset)
