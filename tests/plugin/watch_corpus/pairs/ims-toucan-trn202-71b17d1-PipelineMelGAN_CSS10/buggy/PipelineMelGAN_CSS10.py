"""Train a MelGAN vocoder: multi-resolution spectral losses, then adversarial training after a warm-up."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MelGANGenerator(nn.Module):
    def __init__(self, n_mels=8, hop=4):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(n_mels, 16, 3, padding=1), nn.LeakyReLU(0.2),
                                 nn.ConvTranspose1d(16, 1, hop, stride=hop), nn.Tanh())

    def forward(self, melspec):
        return self.net(melspec)


class MelGANMultiScaleDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.discriminators = nn.ModuleList(
            [nn.Sequential(nn.Conv1d(1, 8, 5, stride=2, padding=2), nn.LeakyReLU(0.2), nn.Conv1d(8, 1, 3, padding=1))
             for _ in range(2)])

    def forward(self, wave):
        outputs, x = [], wave.unsqueeze(1)
        for d in self.discriminators:
            outputs.append(d(x))
            x = nn.functional.avg_pool1d(x, 2)
        return outputs


def multi_resolution_stft_loss(pred, gold, fft_sizes=(16, 32)):
    spectral, magnitude = 0.0, 0.0
    for n_fft in fft_sizes:
        window = torch.hann_window(n_fft)
        p = torch.stft(pred, n_fft, n_fft // 4, window=window, return_complex=True).abs().clamp_min(1e-7)
        g = torch.stft(gold, n_fft, n_fft // 4, window=window, return_complex=True).abs().clamp_min(1e-7)
        spectral = spectral + torch.norm(g - p) / torch.norm(g)
        magnitude = magnitude + nn.functional.l1_loss(p.log(), g.log())
    return spectral / len(fft_sizes), magnitude / len(fft_sizes)


def discriminator_criterion(output, label):
    return nn.functional.mse_loss(output, torch.full_like(output, label))


def train_loop(g, d, train_dataset, epochs=2, batchsize=4, generator_warmup_steps=2, device="cpu"):
    train_loader = DataLoader(dataset=train_dataset, batch_size=batchsize, shuffle=True)
    optimizer_g = torch.optim.Adam(g.parameters(), lr=1e-3)
    optimizer_d = torch.optim.Adam(d.parameters(), lr=1e-3)
    batch_counter = 0
    for epoch in range(epochs):
        optimizer_g.zero_grad()
        optimizer_d.zero_grad()
        for gold_wave, melspec in train_loader:
            batch_counter += 1
            gold_wave, melspec = gold_wave.to(device), melspec.to(device)
            pred_wave = g(melspec).squeeze(1)
            spectral_loss, magnitude_loss = multi_resolution_stft_loss(pred_wave, gold_wave)
            generator_total_loss = spectral_loss + magnitude_loss
            if batch_counter > generator_warmup_steps:  # the generator needs a warm-up
                outputs = d(pred_wave)
                generator_total_loss = generator_total_loss + sum(
                    discriminator_criterion(o, 1.0) for o in outputs) / len(outputs)
            optimizer_g.zero_grad()
            generator_total_loss.backward()
            optimizer_g.step()
            optimizer_g.zero_grad()

            if batch_counter > generator_warmup_steps:
                with torch.no_grad():  # the original recorded a graph here and detached it (TRN601, not this pair's)
                    new_pred = g(melspec).squeeze(1)
                fake = sum(discriminator_criterion(o, 0.0) for o in d(new_pred))
                real = sum(discriminator_criterion(o, 1.0) for o in d(gold_wave))
                discriminator_mse_loss = (fake + real) / 2
                optimizer_d.zero_grad()
                discriminator_mse_loss.backward()
                optimizer_d.step()
                optimizer_d.zero_grad()

            torch.cuda.empty_cache()  # BUG TRN202
        print(f"epoch {epoch}: {batch_counter} steps")


if __name__ == "__main__":
    torch.manual_seed(0)
    melspecs = torch.randn(16, 8, 16)
    waves = torch.tanh(torch.randn(16, 64))
    train_loop(MelGANGenerator(), MelGANMultiScaleDiscriminator(), TensorDataset(waves, melspecs))
