import torch
from torch import nn

from sft_trainer import SFTTrainer


class TinyGPT(nn.Module):
    def __init__(self, vocab=40, dim=16, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        causal = nn.Transformer.generate_square_subsequent_mask(ids.size(1))
        return self.head(self.block(self.embed(ids), src_mask=causal, is_causal=True))


torch.manual_seed(0)
tokens = torch.randint(0, 40, (24, 8))
train_dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens[:16]), batch_size=4, shuffle=True)
eval_dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens[16:]), batch_size=4)
model = TinyGPT()
optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
SFTTrainer(model, optim, train_dataloader, eval_dataloader).fit()
