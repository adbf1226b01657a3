"""A non-autoregressive TTS model: text encoder, pitch/energy/duration predictors, length regulator, decoder."""
import torch
from torch import nn


class VariancePredictor(nn.Module):
    def __init__(self, idim, n_chans=32, kernel_size=3, dropout_rate=0.1):
        super().__init__()
        self.conv = nn.ModuleList([
            nn.Sequential(nn.Conv1d(idim if i == 0 else n_chans, n_chans, kernel_size, padding=kernel_size // 2),
                          nn.ReLU(), nn.Dropout(dropout_rate))
            for i in range(2)])
        self.linear = nn.Linear(n_chans, 1)

    def forward(self, xs, padding_mask=None, utt_embed=None):
        xs = xs.transpose(1, -1)
        for f in self.conv:
            xs = f(xs)
        xs = self.linear(xs.transpose(1, -1))
        if padding_mask is not None:
            xs = xs.masked_fill(padding_mask, 0.0)
        return xs


def length_regulator(xs, durations):
    return torch.stack([torch.repeat_interleave(x, d, dim=0) for x, d in zip(xs, durations)])


class ToucanTTS(nn.Module):
    def __init__(self, input_feature_dimensions=24, attention_dimension=32, output_spectrogram_channels=20):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(input_feature_dimensions, attention_dimension), nn.ReLU(),
                                     nn.Linear(attention_dimension, attention_dimension))
        self.duration_predictor = VariancePredictor(attention_dimension)
        self.pitch_predictor = VariancePredictor(attention_dimension)
        self.energy_predictor = VariancePredictor(attention_dimension)
        self.pitch_embed = nn.Conv1d(1, attention_dimension, kernel_size=1)
        self.energy_embed = nn.Conv1d(1, attention_dimension, kernel_size=1)
        self.decoder = nn.GRU(attention_dimension, attention_dimension, batch_first=True)
        self.output_projection = nn.Linear(attention_dimension, output_spectrogram_channels)
        self.l1 = nn.L1Loss()
        self.mse = nn.MSELoss()

    def forward(self, text_tensors, text_lengths, gold_speech, speech_lengths, gold_durations, gold_pitch,
                gold_energy):
        outs, predicted_durations, pitch_predictions, energy_predictions = self._forward(
            text_tensors, text_lengths, gold_durations=gold_durations, gold_pitch=gold_pitch,
            gold_energy=gold_energy)
        regression_loss = self.l1(outs, gold_speech)
        duration_loss = self.mse(predicted_durations.squeeze(-1), torch.log(gold_durations.float() + 1.0))
        pitch_loss = self.mse(pitch_predictions, gold_pitch)
        energy_loss = self.mse(energy_predictions, gold_energy)
        return regression_loss, duration_loss, pitch_loss, energy_loss

    def _forward(self, text_tensors, text_lengths, gold_durations=None, gold_pitch=None, gold_energy=None):
        padding_masks = torch.arange(text_tensors.shape[1])[None, :] >= text_lengths[:, None]
        encoded_texts = self.encoder(text_tensors)

        # training with teacher forcing
        pitch_predictions = self.pitch_predictor(encoded_texts.detach(), padding_mask=padding_masks.unsqueeze(-1))
        energy_predictions = self.energy_predictor(encoded_texts, padding_mask=padding_masks.unsqueeze(-1))
        predicted_durations = self.duration_predictor(encoded_texts, padding_mask=padding_masks.unsqueeze(-1))

        embedded_pitch_curve = self.pitch_embed(gold_pitch.transpose(1, 2)).transpose(1, 2)
        embedded_energy_curve = self.energy_embed(gold_energy.transpose(1, 2)).transpose(1, 2)
        enriched_encoded_texts = encoded_texts + embedded_energy_curve + embedded_pitch_curve
        upsampled_enriched_encoded_texts = length_regulator(enriched_encoded_texts, gold_durations)

        decoded_speech, _ = self.decoder(upsampled_enriched_encoded_texts)
        preliminary_spectrogram = self.output_projection(decoded_speech)
        return preliminary_spectrogram, predicted_durations, pitch_predictions, energy_predictions
