"""Train the TTS model on synthetic phoneme features with gold durations, pitch and energy."""
import torch

from ToucanTTS import ToucanTTS


def make_batch(batch_size=4, n_phonemes=6, frames_per_phoneme=3, feature_dim=24, spec_dim=20):
    text = torch.randn(batch_size, n_phonemes, feature_dim)
    durations = torch.full((batch_size, n_phonemes), frames_per_phoneme)
    pitch = text[..., :1] * 0.5
    energy = text[..., 1:2].abs()
    speech = torch.randn(batch_size, n_phonemes * frames_per_phoneme, spec_dim)
    lengths = torch.full((batch_size,), n_phonemes)
    return text, lengths, speech, lengths * frames_per_phoneme, durations, pitch, energy


def train_loop(net, steps=6, lr=1e-3):
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    net.train()
    for step_counter in range(steps):
        text, text_lengths, speech, speech_lengths, durations, pitch, energy = make_batch()
        regression_loss, duration_loss, pitch_loss, energy_loss = net(
            text, text_lengths, speech, speech_lengths, durations, pitch, energy)
        train_loss = regression_loss + duration_loss + pitch_loss + energy_loss
        optimizer.zero_grad()
        train_loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0, error_if_nonfinite=False)
        optimizer.step()
    print("steps", step_counter + 1, "pitch loss", round(pitch_loss.item(), 4))


if __name__ == "__main__":
    torch.manual_seed(0)
    train_loop(ToucanTTS())
