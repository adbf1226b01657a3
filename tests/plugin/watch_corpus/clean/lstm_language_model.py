"""A word-level LSTM language model with truncated backpropagation through time: the hidden state is carried
across batches but detached from the previous batch's graph; gradients are clipped before each step."""
import torch
import torch.nn.functional as F
from torch import nn


class RNNModel(nn.Module):
    def __init__(self, ntoken=50, ninp=16, nhid=16, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight  # tied weights: one parameter, registered once
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(self.nlayers, bsz, self.nhid), torch.zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    """Cut the hidden state off the graph of the batch that produced it."""
    return tuple(v.detach() for v in h)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[:nbatch * bsz].view(bsz, -1).t().contiguous()


def main():
    torch.manual_seed(0)
    corpus = torch.randint(0, 50, (400,))
    train_data, val_data = batchify(corpus[:320], 4), batchify(corpus[320:], 4)
    model = RNNModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    bptt = 10
    for epoch in range(2):
        model.train()
        hidden = model.init_hidden(4)
        total = torch.zeros(())
        for i in range(0, train_data.size(0) - 1, bptt):
            seq_len = min(bptt, train_data.size(0) - 1 - i)
            data, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len]
            hidden = repackage_hidden(hidden)
            optimizer.zero_grad()
            output, hidden = model(data, hidden)
            loss = F.cross_entropy(output.view(-1, output.size(-1)), targets.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            total += loss.detach()
        model.eval()
        with torch.no_grad():
            output, _ = model(val_data[:-1], model.init_hidden(4))
            val_loss = F.cross_entropy(output.view(-1, output.size(-1)), val_data[1:].reshape(-1))
        print(f"epoch {epoch}: val ppl {float(val_loss.exp()):.1f}")


if __name__ == "__main__":
    main()
