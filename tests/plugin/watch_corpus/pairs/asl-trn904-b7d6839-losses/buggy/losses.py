"""Asymmetric loss for multi-label classification: a drop-in replacement for BCE or focal loss."""
import torch
import torch.nn as nn


class AsymmetricLoss(nn.Module):
    def __init__(self, gamma_neg=4, gamma_pos=1, clip=0.05):
        super().__init__()
        self.gamma_neg = gamma_neg
        self.gamma_pos = gamma_pos
        self.clip = clip

    def forward(self, x, y):
        # x: logits, y: multi-hot targets
        p_pos = torch.sigmoid(x)
        p_neg = 1 - p_pos

        # asymmetric clipping: shift the negatives' probability up, so easy negatives count for nothing
        if self.clip is not None and self.clip > 0:
            p_neg = (p_neg + self.clip).clamp(max=1)

        # the cross-entropy terms
        loss = y * torch.log(p_pos) + (1 - y) * torch.log(p_neg)

        # asymmetric focusing: down-weight the easy examples, the negatives more than the positives
        if self.gamma_neg > 0 or self.gamma_pos > 0:
            pt = p_pos * y + p_neg * (1 - y)
            gamma = self.gamma_pos * y + self.gamma_neg * (1 - y)
            loss = loss * torch.pow(1 - pt, gamma)

        return -loss.sum()
