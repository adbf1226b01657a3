"""Word-level language model: an LSTM trained with truncated backpropagation through time and plain SGD."""
import argparse

import torch
import torch.nn as nn

import data
import model

parser = argparse.ArgumentParser(description='RNN/LSTM language model on a word-level corpus')
parser.add_argument('--model', type=str, default='LSTM', help='LSTM or GRU')
parser.add_argument('--emsize', type=int, default=32, help='size of word embeddings')
parser.add_argument('--nhid', type=int, default=32, help='number of hidden units per layer')
parser.add_argument('--nlayers', type=int, default=2, help='number of layers')
parser.add_argument('--lr', type=float, default=20, help='initial learning rate')
parser.add_argument('--clip', type=float, default=0.25, help='gradient clipping')
parser.add_argument('--epochs', type=int, default=2, help='upper epoch limit')
parser.add_argument('--batch_size', type=int, default=10, help='batch size')
parser.add_argument('--bptt', type=int, default=8, help='sequence length')
parser.add_argument('--dropout', type=float, default=0.2, help='dropout applied to layers (0 = no dropout)')
parser.add_argument('--seed', type=int, default=1111, help='random seed')
parser.add_argument('--log-interval', type=int, default=10, help='report interval')
args = parser.parse_args()

torch.manual_seed(args.seed)

###############################################################################
# Load data
###############################################################################

corpus = data.Corpus()


# batchify cuts the token stream into bsz equal streams, one per column (tokens left over are dropped).
def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


eval_batch_size = 10
train_data = batchify(corpus.train, args.batch_size)
val_data = batchify(corpus.valid, eval_batch_size)
test_data = batchify(corpus.test, eval_batch_size)

###############################################################################
# Build the model
###############################################################################

ntokens = len(corpus.dictionary)
model = model.RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout)

criterion = nn.NLLLoss()

###############################################################################
# Training code
###############################################################################


def repackage_hidden(h):
    """The hidden state without its autograd history (an LSTM's is a pair of tensors)."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


# get_batch cuts the source into chunks of length args.bptt along the sequence dimension (dimension 0); the
# target of each position is the next word.
def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def evaluate(data_source):
    # dropout off while measuring
    model.eval()
    total_loss = 0.
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    # dropout back on: evaluate() left the model in eval mode
    model.train()
    total_loss = 0.
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        # truncated BPTT: the state carries over between chunks, its graph does not
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        # recurrent nets' gradients can explode: cap their norm before the plain SGD update
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.item()

        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | loss {:5.2f}'.format(
                epoch, batch, len(train_data) // args.bptt, lr, cur_loss))
            total_loss = 0


# Loop over epochs.
lr = args.lr
best_val_loss = None

for epoch in range(1, args.epochs + 1):
    train()
    val_loss = evaluate(val_data)
    print('| end of epoch {:3d} | valid loss {:5.2f}'.format(epoch, val_loss))
    if not best_val_loss or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        # no progress on the validation stream: quarter the step size
        lr /= 4.0

# Run on test data.
test_loss = evaluate(test_data)
print('| End of training | test loss {:5.2f}'.format(test_loss))
