import torch
from torch import nn
from torch.nn import functional as F

from mLSTMblock import mLSTMblock

torch.manual_seed(0)
vocab, block, batch, width = 12, 8, 4, 16
x_example = torch.zeros(batch, block, width)


class CharModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList([mLSTMblock(x_example), mLSTMblock(x_example)])
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x) + x
        return self.head(x)


data = torch.randint(0, vocab, (200,))
model = CharModel()
# the original moves the built model to the GPU; on CPU a cast stands in for that move
model = model.to(torch.float64)  # BUG TRN402
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(4):
    starts = torch.randint(0, len(data) - block - 1, (batch,))
    xb = torch.stack([data[s:s + block] for s in starts])
    yb = torch.stack([data[s + 1:s + block + 1] for s in starts])
    loss = F.cross_entropy(model(xb).reshape(-1, vocab), yb.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"after {step + 1} steps: loss {loss.item():.3f}")
