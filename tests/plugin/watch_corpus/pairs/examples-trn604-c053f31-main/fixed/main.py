"""The MNIST example: a small CNN trained with SGD and momentum, tested after every epoch."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--test-batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--momentum", type=float, default=0.5)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--log-interval", type=int, default=10)
args = parser.parse_args()

torch.manual_seed(args.seed)


def synthetic_digits(n):
    """Stand-ins for MNIST: a class-dependent stroke on noise, normalised as the example normalises."""
    target = torch.randint(0, 10, (n,))
    images = torch.rand(n, 1, 28, 28) * 0.3
    for i, t in enumerate(target.tolist()):
        images[i, 0, 4 + 2 * t, 4:24] = 1.0
    return TensorDataset((images - 0.1307) / 0.3081, target)


train_loader = DataLoader(synthetic_digits(64), batch_size=args.batch_size, shuffle=True)
test_loader = DataLoader(synthetic_digits(32), batch_size=args.test_batch_size, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = F.relu(self.fc2(x))
        return F.log_softmax(x, dim=1)


model = Net()
optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{}]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset), loss.item()))


def test(epoch):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target).item()
            pred = output.max(1)[1]  # get the index of the max log-probability
            correct += pred.eq(target).sum().item()
    test_loss /= len(test_loader)  # loss function already averages over batch size
    print("\nTest set: Average loss: {:.4f}, Accuracy: {}/{}\n".format(
        test_loss, correct, len(test_loader.dataset)))


for epoch in range(1, args.epochs + 1):
    train(epoch)
    test(epoch)
