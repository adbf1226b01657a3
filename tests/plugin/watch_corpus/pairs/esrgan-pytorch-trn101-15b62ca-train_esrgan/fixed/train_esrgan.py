"""ESRGAN's adversarial stage: relativistic GAN losses, mixed precision, an EMA of the generator."""
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel


class Generator(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.LeakyReLU(0.2),
                                  nn.Conv2d(channels, 3 * 4, 3, padding=1), nn.PixelShuffle(2))

    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2) + self.body(x)


def build_discriminator(channels=8):
    return nn.Sequential(nn.Conv2d(3, channels, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
                         nn.Conv2d(channels, 1, 3, padding=1))


def train(d_model, g_model, ema_g_model, batches, pixel_criterion, adversarial_criterion, d_optimizer, g_optimizer,
          scaler, epoch):
    d_model.train()
    g_model.train()
    for lr, gt in batches:
        batch_size, _, height, width = gt.shape
        real_label = torch.full([batch_size, 1, height // 2, width // 2], 1.0)
        fake_label = torch.full([batch_size, 1, height // 2, width // 2], 0.0)

        # Generator: the discriminator is fixed while it trains
        for d_parameters in d_model.parameters():
            d_parameters.requires_grad = False
        # Initialize generator model gradients
        g_model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            sr = g_model(lr)
            gt_output = d_model(gt.detach().clone())
            sr_output = d_model(sr)
            pixel_loss = pixel_criterion(sr.float(), gt)
            d_loss_gt = adversarial_criterion((gt_output - sr_output.mean()).float(), fake_label) * 0.5
            d_loss_sr = adversarial_criterion((sr_output - gt_output.mean()).float(), real_label) * 0.5
            g_loss = pixel_loss + 5e-3 * (d_loss_gt + d_loss_sr)
        scaler.scale(g_loss).backward()
        scaler.step(g_optimizer)
        scaler.update()
        ema_g_model.update_parameters(g_model)

        # Discriminator
        for d_parameters in d_model.parameters():
            d_parameters.requires_grad = True
        d_model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            gt_output = d_model(gt)
            sr_output = d_model(sr.detach().clone())
            d_loss = (adversarial_criterion((gt_output - sr_output.mean()).float(), real_label)
                      + adversarial_criterion((sr_output - gt_output.mean()).float(), fake_label)) * 0.5
        scaler.scale(d_loss).backward()
        scaler.step(d_optimizer)
        scaler.update()
    print(f"epoch {epoch}: g_loss {float(g_loss.detach()):.4f} d_loss {float(d_loss.detach()):.4f}")


def main():
    torch.manual_seed(0)
    gt = torch.rand(8, 3, 8, 8)
    lr = nn.functional.avg_pool2d(gt, 2)
    batches = [(lr[i:i + 4], gt[i:i + 4]) for i in (0, 4)]
    d_model, g_model = build_discriminator(), Generator()
    ema_g_model = AveragedModel(g_model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.999))
    d_optimizer = torch.optim.Adam(d_model.parameters(), 1e-4)
    g_optimizer = torch.optim.Adam(g_model.parameters(), 1e-4)
    scaler = torch.amp.GradScaler("cpu")
    for epoch in range(2):
        train(d_model, g_model, ema_g_model, batches, nn.L1Loss(), nn.BCEWithLogitsLoss(), d_optimizer, g_optimizer,
              scaler, epoch)


if __name__ == "__main__":
    main()
