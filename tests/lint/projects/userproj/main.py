import argparse

import torch
from torch import nn

from data import build_loader
from model import Classifier, load_pretrained
from train import evaluate, finetune, train_one_epoch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--distributed", action="store_true")
    args = parser.parse_args()
    net = Classifier([32, 64, 64])
    net = nn.DataParallel(net)  # BUG TRN301
    loader = build_loader(32, args.distributed)  # BUG TRN302
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    for epoch in range(args.epochs):
        sched.step()  # BUG TRN801
        train_one_epoch(net, loader, loss_fn, opt, "cpu")
        print(epoch, evaluate(net, loader))
    finetune(net, loader, loss_fn, opt, 10)
    load_pretrained(net, "ckpt.pt")


if __name__ == "__main__":
    main()
