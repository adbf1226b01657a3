"""The GRU forecasting model: fit() with early stopping on a validation score."""
import copy

import numpy as np
import torch
import torch.nn as nn


class GRUModel(nn.Module):
    def __init__(self, d_feat=6, hidden_size=16, num_layers=2, dropout=0.0):
        super().__init__()
        self.rnn = nn.GRU(input_size=d_feat, hidden_size=hidden_size, num_layers=num_layers, batch_first=True,
                          dropout=dropout)
        self.fc_out = nn.Linear(hidden_size, 1)
        self.d_feat = d_feat

    def forward(self, x):
        x = x.reshape(len(x), self.d_feat, -1).permute(0, 2, 1)  # [N, T, F]
        out, _ = self.rnn(x)
        return self.fc_out(out[:, -1, :]).squeeze()


class GRU:
    def __init__(self, d_feat=6, n_epochs=3, lr=1e-3, batch_size=8, early_stop=5, seed=0):
        np.random.seed(seed)
        torch.manual_seed(seed)
        self.d_feat, self.n_epochs, self.batch_size, self.early_stop = d_feat, n_epochs, batch_size, early_stop
        self.gru_model = GRUModel(d_feat=d_feat)
        self.train_optimizer = torch.optim.Adam(self.gru_model.parameters(), lr=lr)

    def loss_fn(self, pred, label):
        mask = ~torch.isnan(label)
        return ((pred[mask] - label[mask]) ** 2).mean()

    def metric_fn(self, pred, label):
        return -self.loss_fn(pred, label)

    def train_epoch(self, x_train, y_train):
        self.gru_model.train()
        indices = np.arange(len(x_train))
        np.random.shuffle(indices)
        for i in range(0, len(indices), self.batch_size):
            feature = torch.from_numpy(x_train[indices[i:i + self.batch_size]]).float()
            label = torch.from_numpy(y_train[indices[i:i + self.batch_size]]).float()
            loss = self.loss_fn(self.gru_model(feature), label)
            self.train_optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(self.gru_model.parameters(), 3.0)
            self.train_optimizer.step()

    def test_epoch(self, data_x, data_y):
        self.gru_model.eval()
        scores, losses = [], []
        indices = np.arange(len(data_x))
        for i in range(0, len(indices), self.batch_size):
            feature = torch.from_numpy(data_x[indices[i:i + self.batch_size]]).float()
            label = torch.from_numpy(data_y[indices[i:i + self.batch_size]]).float()
            with torch.no_grad():
                pred = self.gru_model(feature)
                loss = self.loss_fn(pred, label)
                losses.append(loss)
                score = self.metric_fn(pred, label)
                scores.append(score)
        return torch.stack(losses).mean(), torch.stack(scores).mean()

    def fit(self, x_train, y_train, x_valid, y_valid):
        stop_steps, best_score, best_epoch = 0, -np.inf, 0
        best_param = copy.deepcopy(self.gru_model.state_dict())
        for step in range(self.n_epochs):
            self.train_epoch(x_train, y_train)
            train_loss, train_score = self.test_epoch(x_train, y_train)
            val_loss, val_score = self.test_epoch(x_valid, y_valid)
            val_score = float(val_score)
            if val_score > best_score:
                best_score, stop_steps, best_epoch = val_score, 0, step
                best_param = copy.deepcopy(self.gru_model.state_dict())
            else:
                stop_steps += 1
                if stop_steps >= self.early_stop:
                    break
        print(f"best score: {best_score:.6f} @ {best_epoch}")
        self.gru_model.load_state_dict(best_param)
        return self
