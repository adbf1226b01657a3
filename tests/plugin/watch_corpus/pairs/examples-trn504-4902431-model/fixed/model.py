import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Word embedding, a stacked LSTM or GRU, and a linear layer back to the vocabulary."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        recurrent = {'LSTM': nn.LSTM, 'GRU': nn.GRU}[rnn_type]
        self.rnn = recurrent(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        # small uniform embeddings and output weights, zero output bias
        for weight in (self.encoder.weight, self.decoder.weight):
            nn.init.uniform_(weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        decoded = self.decoder(self.drop(output))
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        zeros = next(self.parameters()).new_zeros(self.nlayers, bsz, self.nhid)
        return (zeros, zeros.clone()) if self.rnn_type == 'LSTM' else zeros
