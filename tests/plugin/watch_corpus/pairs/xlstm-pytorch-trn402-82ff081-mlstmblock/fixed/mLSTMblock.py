"""An mLSTM block: gated matrix-memory recurrence whose cell and normaliser states carry over between calls."""
import torch
from torch import nn
from torch.nn import functional as F


class mLSTMblock(nn.Module):
    def __init__(self, x_example, factor=2, dropout=0.1):
        super().__init__()
        self.input_size = x_example.shape[2]
        self.hidden_size = int(self.input_size * factor)
        self.ln = nn.LayerNorm(self.input_size)
        self.left = nn.Linear(self.input_size, self.hidden_size)
        self.right = nn.Linear(self.input_size, self.hidden_size)
        self.wq = nn.Linear(self.hidden_size, self.hidden_size)
        self.wk = nn.Linear(self.hidden_size, self.hidden_size)
        self.wv = nn.Linear(self.hidden_size, self.hidden_size)
        self.i_gate = nn.Linear(self.hidden_size, self.hidden_size)
        self.f_gate = nn.Linear(self.hidden_size, self.hidden_size)
        self.o_gate = nn.Linear(self.hidden_size, self.hidden_size)
        self.lni, self.lnf = nn.LayerNorm(self.hidden_size), nn.LayerNorm(self.hidden_size)
        self.ln_c, self.ln_n = nn.LayerNorm(self.hidden_size), nn.LayerNorm(self.hidden_size)
        self.drop = nn.Dropout(dropout)
        self.proj = nn.Linear(self.hidden_size, self.input_size)
        # buffers: the module's moves and casts take the carried-over states along
        self.ct_1 = nn.Buffer(torch.zeros([1, 1, self.hidden_size]))
        self.nt_1 = nn.Buffer(torch.zeros([1, 1, self.hidden_size]))

    def forward(self, x):
        x = self.ln(x)
        left, right = self.left(x), F.silu(self.right(x))
        q, k, v = self.wq(left), self.wk(left), self.wv(left)
        i = torch.exp(self.lni(self.i_gate(left)))
        f = torch.exp(self.lnf(self.f_gate(left)))
        o = torch.sigmoid(self.o_gate(left))
        ct = torch.mean(self.ln_c(f * self.ct_1 + i * v * k), [0, 1], keepdim=True)
        self.ct_1 = ct.detach()
        nt = torch.mean(self.ln_n(f * self.nt_1 + i * k), [0, 1], keepdim=True)
        self.nt_1 = nt.detach()
        ht = o * ((ct * q) / torch.max(nt * q))
        return self.proj(self.drop(ht) * right)
