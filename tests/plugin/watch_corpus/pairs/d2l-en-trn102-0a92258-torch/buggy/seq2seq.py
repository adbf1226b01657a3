import torch
from torch import nn

import d2l_torch


class Seq2SeqEncoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, batch_first=True)

    def forward(self, X):
        return self.rnn(self.embedding(X))


class Seq2SeqDecoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, batch_first=True)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def forward(self, X, state):
        embs = self.embedding(X)
        context = state[-1][:, None, :].expand(-1, embs.shape[1], -1)
        output, state = self.rnn(torch.cat([embs, context], -1), state)
        return self.dense(output), state


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, enc_X, dec_X, valid_len):
        _, state = self.encoder(enc_X)
        return self.decoder(dec_X, state)


torch.manual_seed(0)
vocab, steps = 12, 5
X, Y = torch.randint(3, vocab, (16, steps)), torch.randint(3, vocab, (16, steps))
lens = torch.randint(2, steps + 1, (16,))
batches = [(X[i:i + 8], lens[i:i + 8], Y[i:i + 8], lens[i:i + 8]) for i in (0, 8)]
net = EncoderDecoder(Seq2SeqEncoder(vocab, 8, 16), Seq2SeqDecoder(vocab, 8, 16))
d2l_torch.train_seq2seq(net, batches, lr=0.01, num_epochs=2, bos_index=1)
