# realbug-expected: TRN501 shape=container case=pytorch-lightning-gans-trn501-46272a4-acgan
import torch.nn as nn
import torch.nn.functional as F


class Critic(nn.Module):
    def __init__(self, width, n_classes):
        super().__init__()
        self.body = nn.Linear(784, width)
        self.label_head = nn.Sequential(nn.Linear(width, n_classes))

    def forward(self, img):
        return self.label_head(self.body(img))


def class_loss(critic, img, target):
    return F.cross_entropy(critic(img), target)
