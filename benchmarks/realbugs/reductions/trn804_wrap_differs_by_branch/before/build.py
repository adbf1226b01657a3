# realbug-expected: TRN804 shape=branch case=pytorch-distributed-example-trn804-b81237f-main
import torch
import torch.nn as nn


def build(Classifier, use_cuda):
    device = torch.device("cuda" if use_cuda else "cpu")
    net = Classifier()
    if use_cuda:
        net = nn.parallel.DistributedDataParallel(net)
    else:
        net = LocalAverager(net)
    net.to(device)
    return net
