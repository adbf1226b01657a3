# realbug-expected: TRN501 shape=spelling case=transformer-gcn-qa-trn501-aca0dc1-models
import torch
import torch.nn as nn


def candidate_loss(scores, target):
    return nn.CrossEntropyLoss()(scores.view(1, -1), target)
