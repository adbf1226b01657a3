"""Auxiliary-classifier GAN as a Lightning-style module: the discriminator also predicts the image's class."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, latent_dim, img_shape, n_classes):
        super().__init__()
        self.img_shape = img_shape
        self.init_size = img_shape[1] // 4
        self.l1 = nn.Sequential(nn.Linear(latent_dim, 32 * self.init_size ** 2))
        self.label_emb = nn.Embedding(n_classes, latent_dim)
        self.conv_blocks = nn.Sequential(
            nn.BatchNorm2d(32),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(32, 32, 3, stride=1, padding=1),
            nn.BatchNorm2d(32, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(32, 16, 3, stride=1, padding=1),
            nn.BatchNorm2d(16, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(16, img_shape[0], 3, stride=1, padding=1),
            nn.Tanh(),
        )

    def forward(self, z, labels):
        z = torch.mul(self.label_emb(labels), z)
        out = self.l1(z)
        out = out.view(out.shape[0], 32, self.init_size, self.init_size)
        return self.conv_blocks(out)


class Discriminator(nn.Module):
    def __init__(self, img_shape, n_classes):
        super().__init__()

        def discriminator_block(in_feat, out_feat, bn=True):
            block = [nn.Conv2d(in_feat, out_feat, 3, 2, 1), nn.LeakyReLU(0.2, inplace=True), nn.Dropout2d(0.25)]
            if bn:
                block.append(nn.BatchNorm2d(out_feat, 0.8))
            return block

        self.model = nn.Sequential(
            *discriminator_block(img_shape[0], 8, bn=False),
            *discriminator_block(8, 16),
            *discriminator_block(16, 32),
            *discriminator_block(32, 32),
        )
        # The height and width of downsampled image
        ds_size = img_shape[1] // 2 ** 4
        self.adv_layer = nn.Sequential(nn.Linear(32 * ds_size ** 2, 1), nn.Sigmoid())
        self.aux_layer = nn.Sequential(nn.Linear(32 * ds_size ** 2, n_classes))

    def forward(self, img):
        out = self.model(img)
        out = out.view(out.shape[0], -1)
        validity = self.adv_layer(out)
        labels = self.aux_layer(out)
        return validity, labels


class ACGAN(nn.Module):
    def __init__(self, latent_dim=16, n_classes=10, lr=0.0002, b1=0.5, b2=0.999, batch_size=8):
        super().__init__()
        self.latent_dim, self.n_classes, self.batch_size = latent_dim, n_classes, batch_size
        self.lr, self.b1, self.b2 = lr, b1, b2
        img_shape = (1, 16, 16)
        self.generator = Generator(latent_dim=latent_dim, img_shape=img_shape, n_classes=n_classes)
        self.discriminator = Discriminator(img_shape=img_shape, n_classes=n_classes)

    def forward(self, z, labels):
        return self.generator(z, labels)

    def adversarial_loss(self, y_hat, y):
        return F.binary_cross_entropy(y_hat, y)

    def auxiliary_loss(self, y_hat, y):
        return F.cross_entropy(y_hat, y)

    def training_step(self, batch, batch_idx, optimizer_idx):
        imgs, labels = batch
        z = torch.randn(imgs.shape[0], self.latent_dim).type_as(imgs)
        gen_labels = torch.LongTensor(np.random.randint(0, self.n_classes, self.batch_size))

        # train generator
        if optimizer_idx == 0:
            valid = torch.ones(imgs.size(0), 1).type_as(imgs)
            validity, pred_label = self.discriminator(self(z, gen_labels))
            return 0.5 * self.adversarial_loss(validity, valid) + self.auxiliary_loss(pred_label, gen_labels)

        # train discriminator
        if optimizer_idx == 1:
            valid = torch.ones(imgs.size(0), 1).type_as(imgs)
            gen_imgs = self(z, gen_labels)
            validity, pred_label = self.discriminator(imgs)
            real_loss = 0.5 * self.adversarial_loss(validity, valid) + self.auxiliary_loss(pred_label, labels)
            fake = torch.zeros(imgs.size(0), 1).type_as(imgs)
            fake_validity, fake_pred_label = self.discriminator(gen_imgs)
            fake_loss = 0.5 * self.adversarial_loss(fake_validity, fake) + self.auxiliary_loss(fake_pred_label, gen_labels)
            return (real_loss + fake_loss) / 2

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.lr, betas=(self.b1, self.b2))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.lr, betas=(self.b1, self.b2))
        return [opt_g, opt_d], []
