"""Distributed MNIST-style example: one process per rank (torchrun), a DistributedDataParallel linear classifier."""
import torch
import torch.nn.functional as F
from torch import distributed, nn
from torch.utils import data
from torch.utils.data.distributed import DistributedSampler


class Average:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, number):
        self.sum += value * number
        self.count += number

    def __str__(self):
        return f"{float(self.sum) / self.count:.6f}"


class Accuracy:
    def __init__(self):
        self.correct, self.count = 0, 0

    def update(self, output, label):
        self.correct += output.argmax(dim=1).eq(label).sum().item()
        self.count += output.size(0)

    def __str__(self):
        return f"{100 * self.correct / self.count:.2f}%"


class Trainer:
    def __init__(self, net, optimizer, train_loader, test_loader, device, dtype):
        self.net, self.optimizer = net, optimizer
        self.train_loader, self.test_loader = train_loader, test_loader
        self.device, self.dtype = device, dtype

    def fit(self, epochs):
        for epoch in range(1, epochs + 1):
            train_loss, train_acc = self.train()
            test_loss, test_acc = self.evaluate()
            print(f"Epoch: {epoch}/{epochs}, train loss: {train_loss}, train acc: {train_acc}, "
                  f"test loss: {test_loss}, test acc: {test_acc}.")

    def train(self):
        train_loss, train_acc = Average(), Accuracy()
        self.net.train()
        for images, label in self.train_loader:
            images, label = images.to(self.device, self.dtype), label.to(self.device)
            output = self.net(images)
            loss = F.cross_entropy(output, label)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            train_loss.update(loss.detach(), images.size(0))  # read once per epoch, by print
            train_acc.update(output, label)
        return train_loss, train_acc

    def evaluate(self):
        test_loss, test_acc = Average(), Accuracy()
        self.net.eval()
        with torch.no_grad():
            for images, label in self.test_loader:
                images, label = images.to(self.device, self.dtype), label.to(self.device)
                output = self.net(images)
                test_loss.update(F.cross_entropy(output, label).item(), images.size(0))
                test_acc.update(output, label)
        return test_loss, test_acc


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.view(x.size(0), -1))


def get_dataloader(batch_size):
    train_set = data.TensorDataset(torch.randn(128, 1, 28, 28), torch.randint(0, 10, (128,)))
    test_set = data.TensorDataset(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,)))
    sampler = DistributedSampler(train_set)
    train_loader = data.DataLoader(train_set, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)
    test_loader = data.DataLoader(test_set, batch_size=batch_size, shuffle=False)
    return train_loader, test_loader


def run(epochs=1, learning_rate=1e-3, batch_size=16):
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    dtype = torch.float64

    net = Net().to(device, dtype)
    net = nn.parallel.DistributedDataParallel(net)

    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    train_loader, test_loader = get_dataloader(batch_size)
    Trainer(net, optimizer, train_loader, test_loader, device, dtype).fit(epochs)


if __name__ == "__main__":
    distributed.init_process_group("gloo")
    torch.manual_seed(0)
    run()
    distributed.destroy_process_group()
