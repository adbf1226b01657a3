"""A DCGAN-style GAN: the discriminator steps on real and detached fake samples, then the generator steps
through the discriminator; each network has its own optimizer and clears its own gradients."""
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, nz=8, ngf=8):
        super().__init__()
        self.main = nn.Sequential(nn.ConvTranspose2d(nz, ngf, 4, 1, 0), nn.BatchNorm2d(ngf), nn.ReLU(True),
                                  nn.ConvTranspose2d(ngf, 1, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=8):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(1, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True),
                                  nn.Conv2d(ndf, 1, 4, 1, 0), nn.Flatten())

    def forward(self, x):
        return self.main(x)


def main():
    torch.manual_seed(0)
    nz = 8
    real_images = torch.tanh(torch.randn(32, 1, 8, 8))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(real_images), batch_size=8, shuffle=True)
    netG, netD = Generator(nz), Discriminator()
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for epoch in range(2):
        d_total, g_total = torch.zeros(()), torch.zeros(())
        for (real,) in loader:
            b = real.size(0)
            ones, zeros = torch.ones(b, 1), torch.zeros(b, 1)
            # (1) the discriminator: real up, fake (detached: no generator gradients) down
            netD.zero_grad()
            fake = netG(torch.randn(b, nz, 1, 1))
            errD = criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros)
            errD.backward()
            optimizerD.step()
            # (2) the generator: make the discriminator call the fakes real
            netG.zero_grad()
            errG = criterion(netD(fake), ones)
            errG.backward()
            optimizerG.step()
            d_total += errD.detach()
            g_total += errG.detach()
        print(f"epoch {epoch}: loss D {float(d_total):.3f} loss G {float(g_total):.3f}")


if __name__ == "__main__":
    main()
