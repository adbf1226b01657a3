"""A reduced Temporal Fusion Transformer: LSTM encoder-decoder, masked self-attention over the horizon, and a
relative time index fed in as an extra input; TFTModel wraps it with fit() and predict()."""
import torch
from torch import nn


class _TFTModule(nn.Module):
    def __init__(self, input_chunk_length, output_chunk_length, hidden_size=16, add_relative_index=True,
                 full_attention=False):
        super().__init__()
        self.input_chunk_length = input_chunk_length
        self.output_chunk_length = output_chunk_length
        self.add_relative_index = add_relative_index
        self.full_attention = full_attention
        self.encoder_embedding = nn.Linear(3, hidden_size)  # target, future covariate, relative index
        self.decoder_embedding = nn.Linear(2, hidden_size)  # future covariate, relative index
        self.lstm_encoder = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.lstm_decoder = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.query, self.key, self.value = (nn.Linear(hidden_size, hidden_size) for _ in range(3))
        self.output_layer = nn.Linear(hidden_size, 1)

        # masks and index depend on the batch size only: made again when it changes
        self.batch_size_last = -1
        self.register_buffer("attention_mask", None, persistent=False)
        self.register_buffer("relative_index", None, persistent=False)

    @staticmethod
    def get_relative_index(encoder_length, decoder_length, batch_size, dtype, device):
        index = torch.arange(encoder_length + decoder_length, dtype=dtype, device=device) / (encoder_length - 1)
        return index.reshape(1, -1, 1).repeat(batch_size, 1, 1)

    @staticmethod
    def get_attention_mask_future(encoder_length, decoder_length, batch_size, device, full_attention):
        if full_attention:
            decoder_mask = torch.zeros(decoder_length, decoder_length, dtype=torch.bool, device=device)
        else:  # a horizon step sees the steps before it, not itself nor later ones
            steps = torch.arange(decoder_length, device=device)
            decoder_mask = steps[None, :] >= steps[:, None]
        encoder_mask = torch.zeros(batch_size, encoder_length, dtype=torch.bool, device=device)
        return torch.cat([encoder_mask.unsqueeze(1).expand(-1, decoder_length, -1),
                          decoder_mask.unsqueeze(0).expand(batch_size, -1, -1)], dim=2)

    def forward(self, x_in):
        x_past, x_future = x_in
        batch_size = x_past.shape[0]
        encoder_length, decoder_length = self.input_chunk_length, self.output_chunk_length
        if batch_size != self.batch_size_last:
            self.attention_mask = self.get_attention_mask_future(encoder_length, decoder_length, batch_size,
                                                                 x_past.device, self.full_attention)
            if self.add_relative_index:
                self.relative_index = self.get_relative_index(encoder_length, decoder_length, batch_size,
                                                              x_past.dtype, x_past.device)
            self.batch_size_last = batch_size
        if self.add_relative_index:
            x_past = torch.cat([t[:, :encoder_length] for t in (x_past, self.relative_index) if t is not None],
                               dim=2)
            x_future = torch.cat([t[:, -decoder_length:] for t in (x_future, self.relative_index)
                                  if t is not None], dim=2)
        encoder_out, state = self.lstm_encoder(self.encoder_embedding(x_past))
        decoder_out, _ = self.lstm_decoder(self.decoder_embedding(x_future), state)
        lstm_out = torch.cat([encoder_out, decoder_out], dim=1)
        q, k, v = self.query(decoder_out), self.key(lstm_out), self.value(lstm_out)
        scores = (q @ k.transpose(1, 2)) / k.shape[-1] ** 0.5
        attention = torch.softmax(scores.masked_fill(self.attention_mask, float("-inf")), dim=-1)
        return self.output_layer(attention @ v + decoder_out)


class TFTModel:
    def __init__(self, input_chunk_length, output_chunk_length, batch_size=4, n_epochs=3, lr=1e-2):
        self.input_chunk_length, self.output_chunk_length = input_chunk_length, output_chunk_length
        self.batch_size, self.n_epochs, self.lr = batch_size, n_epochs, lr
        self.model = _TFTModule(input_chunk_length, output_chunk_length)

    def _samples(self, series, future_covariates):
        span, cut = self.input_chunk_length + self.output_chunk_length, self.input_chunk_length
        windows = series.unfold(0, span, 1).unsqueeze(-1)
        known = future_covariates[:len(series)].unfold(0, span, 1).unsqueeze(-1)
        return torch.cat([windows[:, :cut], known[:, :cut]], dim=2), known[:, cut:], windows[:, cut:]

    def fit(self, series, future_covariates):
        past, future, target = self._samples(series, future_covariates)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        self.model.train()
        for epoch in range(self.n_epochs):
            for i in range(0, len(past) - self.batch_size + 1, self.batch_size):
                prediction = self.model((past[i:i + self.batch_size], future[i:i + self.batch_size]))
                loss = nn.functional.mse_loss(prediction, target[i:i + self.batch_size])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        return self

    def predict(self, n, series, future_covariates):
        dtype = next(self.model.parameters()).dtype
        end, horizon = len(series[0]), self.output_chunk_length
        past = torch.stack([torch.stack([s[-self.input_chunk_length:],
                                         future_covariates[end - self.input_chunk_length:end]], dim=-1)
                            for s in series]).to(dtype)
        future = future_covariates[end:end + horizon].reshape(1, -1, 1).repeat(len(series), 1, 1).to(dtype)
        self.model.eval()
        with torch.no_grad():
            return self.model((past, future))[:, :n, 0]
