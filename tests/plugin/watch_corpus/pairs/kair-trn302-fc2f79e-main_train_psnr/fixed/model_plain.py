"""The restoration model wrapper: the network, its loss, its optimizer and its learning-rate schedule."""
import torch
from torch import nn


class ModelPlain:
    def __init__(self, opt):
        self.opt = opt
        self.netG = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
        self.G_lossfn = nn.L1Loss()
        self.G_optimizer = torch.optim.Adam(self.netG.parameters(), lr=opt["train"]["G_optimizer_lr"])
        self.schedulers = [torch.optim.lr_scheduler.MultiStepLR(self.G_optimizer, milestones=[4], gamma=0.5)]

    def init_train(self):
        self.netG.train()

    def feed_data(self, data):
        self.L, self.H = data["L"], data["H"]

    def optimize_parameters(self, current_step):
        self.G_optimizer.zero_grad()
        self.E = self.netG(self.L)
        G_loss = self.G_lossfn(self.E, self.H)
        G_loss.backward()
        self.G_optimizer.step()
        self.log = {"G_loss": G_loss.detach()}

    def update_learning_rate(self, n):
        for scheduler in self.schedulers:
            scheduler.step()
