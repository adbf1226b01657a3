"""Train a CIFAR-100-style classifier with warm-up, evaluating on the test split after each epoch."""
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import _LRScheduler


class WarmUpLR(_LRScheduler):
    def __init__(self, optimizer, total_iters, last_epoch=-1):
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base_lr * self.last_epoch / (self.total_iters + 1e-8) for base_lr in self.base_lrs]


def train(epoch):
    net.train()
    for batch_index, (images, labels) in enumerate(cifar100_training_loader):
        optimizer.zero_grad()
        outputs = net(images)
        loss = loss_function(outputs, labels)
        loss.backward()
        optimizer.step()
        if epoch <= args.warm:
            warmup_scheduler.step()


def eval_training(epoch):
    net.eval()
    test_loss = torch.zeros(())
    correct = torch.zeros((), dtype=torch.long)
    for images, labels in cifar100_test_loader:
        outputs = net(images)  # BUG TRN601
        loss = loss_function(outputs, labels)
        test_loss += loss.detach()
        _, preds = outputs.max(1)
        correct += preds.eq(labels).sum()
    n = len(cifar100_test_loader.dataset)
    print(f"Test set: epoch {epoch}, average loss {float(test_loss) / n:.4f}, accuracy {float(correct) / n:.4f}")
    return correct / n


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-warm", type=int, default=1)
    parser.add_argument("-lr", type=float, default=0.1)
    args = parser.parse_args()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(8, 100))
    images, labels = torch.randn(24, 3, 8, 8), torch.randint(0, 100, (24,))
    cifar100_training_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images[:16], labels[:16]), batch_size=4, shuffle=True)
    cifar100_test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images[16:], labels[16:]), batch_size=4)
    loss_function = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    train_scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.2)
    warmup_scheduler = WarmUpLR(optimizer, len(cifar100_training_loader) * args.warm)
    best_acc = 0.0
    for epoch in range(1, 3):
        train(epoch)
        if epoch > args.warm:
            train_scheduler.step()
        acc = eval_training(epoch)
        best_acc = max(best_acc, float(acc))
