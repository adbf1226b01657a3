# realbug-expected: TRN602 shape=spelling case=pointnet.pytorch-trn602-4df9208-train_classification
import torch
import torch.nn.functional as F


def fit(net, opt, train_loader, test_loader, epochs):
    for epoch in range(epochs):
        for i, (x, y) in enumerate(train_loader):
            net.train()
            opt.zero_grad()
            F.nll_loss(net(x), y).backward()
            opt.step()
            if i % 10 == 0:
                tx, ty = next(iter(test_loader))
                net.eval()
                with torch.no_grad():
                    print((net(tx).argmax(1) == ty).float().mean().item())
