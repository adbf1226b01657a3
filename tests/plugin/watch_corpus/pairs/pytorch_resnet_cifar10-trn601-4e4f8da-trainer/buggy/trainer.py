"""Train the CIFAR ResNet; validate after every epoch and keep the best precision."""
import argparse
import warnings

import torch
from torch import nn

import resnet

parser = argparse.ArgumentParser(description="Proper ResNets for CIFAR10 in pytorch")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--lr", default=0.1, type=float)
best_prec1 = 0


def main():
    global best_prec1
    args = parser.parse_args()
    torch.manual_seed(0)
    model = resnet.resnet8()
    images, labels = torch.randn(32, 3, 8, 8), torch.randint(0, 10, (32,))
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images[:24], labels[:24]),
                                               batch_size=8, shuffle=True)
    val_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images[24:], labels[24:]), batch_size=4)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1])
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch)
        lr_scheduler.step()
        prec1 = validate(val_loader, model, criterion)
        best_prec1 = max(prec1, best_prec1)
    print(f"best precision {best_prec1:.2f}")


def train(train_loader, model, criterion, optimizer, epoch):
    model.train()
    for i, (input, target) in enumerate(train_loader):
        output = model(input)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(val_loader, model, criterion):
    model.eval()
    correct, losses, seen = torch.zeros(()), torch.zeros(()), 0
    for i, (input, target) in enumerate(val_loader):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "volatile was removed": the old spelling still runs
            input_var = torch.autograd.Variable(input, volatile=True)
            target_var = torch.autograd.Variable(target, volatile=True)
        output = model(input_var)  # BUG TRN601
        loss = criterion(output, target_var)
        losses += loss.detach() * target.size(0)
        correct += (output.argmax(1) == target_var).sum()
        seen += target.size(0)
    print(f"validation loss {float(losses / seen):.4f}")
    return float(100.0 * correct / seen)


if __name__ == "__main__":
    main()
