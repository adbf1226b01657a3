"""Predict each phoneme's duration (in frames, log domain) from the encoder's states."""
import torch


class DurationPredictor(torch.nn.Module):
    def __init__(self, idim, n_layers=2, n_chans=16, kernel_size=3, dropout_rate=0.1, offset=1.0):
        super().__init__()
        self.offset = offset
        self.conv = torch.nn.ModuleList()
        self.dropouts = list()
        self.norms = list()  # BUG TRN401
        for idx in range(n_layers):
            in_chans = idim if idx == 0 else n_chans
            self.conv.append(torch.nn.Sequential(
                torch.nn.Conv1d(in_chans, n_chans, kernel_size, stride=1, padding=(kernel_size - 1) // 2),
                torch.nn.ReLU()))
            self.norms.append(torch.nn.LayerNorm(n_chans))
            self.dropouts.append(torch.nn.Dropout(dropout_rate))
        self.linear = torch.nn.Linear(n_chans, 1)

    def _forward(self, xs, x_masks=None):
        xs = xs.transpose(1, -1)  # (B, idim, Tmax)
        for f, c, d in zip(self.conv, self.norms, self.dropouts):
            xs = d(c(f(xs).transpose(1, -1)).transpose(1, -1))
        xs = self.linear(xs.transpose(1, -1)).squeeze(-1)  # (B, Tmax)
        if x_masks is not None:
            xs = xs.masked_fill(x_masks, 0.0)
        return xs

    def forward(self, xs, padding_mask=None):
        return self._forward(xs, padding_mask)


class DurationPredictorLoss(torch.nn.Module):
    def __init__(self, offset=1.0):
        super().__init__()
        self.offset = offset
        self.criterion = torch.nn.MSELoss()

    def forward(self, outputs, targets):
        return self.criterion(outputs, torch.log(targets.float() + self.offset))
