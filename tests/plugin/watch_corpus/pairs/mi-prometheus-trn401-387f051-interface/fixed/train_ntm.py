"""Train a tiny NTM-style reader to recall a vector written to its memory."""
import torch
import torch.nn.functional as F

from interface import Interface


class NTMCell(torch.nn.Module):
    def __init__(self, input_size=6, hidden=16, slots=5, bits=6, heads=2):
        super().__init__()
        self.controller = torch.nn.LSTMCell(input_size, hidden)
        self.interface = Interface(heads, hidden, bits)
        self.output = torch.nn.Linear(heads * bits, bits)
        self.slots, self.heads = slots, heads

    def forward(self, inputs, memory):
        batch = inputs.shape[1]
        state = (torch.zeros(batch, self.controller.hidden_size), torch.zeros(batch, self.controller.hidden_size))
        attentions = [torch.full((batch, self.slots), 1.0 / self.slots) for _ in range(self.heads)]
        for x in inputs:
            state = self.controller(x, state)
            reads, attentions = self.interface(state[0], memory, attentions)
        return self.output(torch.cat(reads, -1))


torch.manual_seed(0)
model = NTMCell()
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
for episode in range(4):
    memory = torch.randn(4, 5, 6)
    inputs = torch.randn(3, 4, 6)
    target = memory[:, 0]
    optimizer.zero_grad()
    loss = F.mse_loss(model(inputs, memory), target)
    loss.backward()
    optimizer.step()
print("episodes done")
