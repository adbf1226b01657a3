# realbug-expected: TRN501 shape=container case=pytorch-lightning-gans-trn501-46272a4-acgan
import torch.nn as nn
import torch.nn.functional as F


class Critic(nn.Module):
    def __init__(self, width, n_classes):
        super().__init__()
        self.body = nn.Linear(784, width)
        self.real_head = nn.Sequential(nn.Linear(width, 1), nn.Sigmoid())
        self.label_head = nn.Sequential(nn.Linear(width, n_classes), nn.Softmax(dim=1))

    def forward(self, img):
        h = self.body(img)
        return self.real_head(h), self.label_head(h)


class ConditionalGAN:
    def __init__(self, width, n_classes):
        self.critic = Critic(width, n_classes)

    def label_loss(self, predicted, target):
        return F.cross_entropy(predicted, target)

    def critic_loss(self, img, target):
        is_real, label = self.critic(img)
        return self.label_loss(label, target)
