"""A DNN model for the quant platform: fit() on a feature frame, regression or binary (up/down) labels."""
import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, input_dim, output_dim=1, layers=(32,), act="LeakyReLU", loss="mse"):
        super().__init__()
        layers = [input_dim] + list(layers)
        dnn_layers = []
        for i, (_input_dim, hidden_units) in enumerate(zip(layers[:-1], layers[1:])):
            fc = nn.Linear(_input_dim, hidden_units)
            activation = nn.LeakyReLU(negative_slope=0.1) if act == "LeakyReLU" else nn.SiLU()
            dnn_layers.append(nn.Sequential(fc, activation))
        drop_input = nn.Dropout(0.05)
        dnn_layers.append(drop_input)
        if loss == "mse":
            fc = nn.Linear(hidden_units, output_dim)
            dnn_layers.append(fc)
        elif loss == "binary":
            fc = nn.Linear(hidden_units, output_dim)
            sigmoid = nn.Sigmoid()
            dnn_layers.append(nn.Sequential(fc, sigmoid))
        else:
            raise NotImplementedError(f"loss {loss} is not supported!")
        self.dnn_layers = nn.ModuleList(dnn_layers)

    def forward(self, x):
        cur_output = x
        for now_layer in self.dnn_layers:
            cur_output = now_layer(cur_output)
        return cur_output


class DNNModelPytorch:
    def __init__(self, input_dim, loss="mse", lr=0.002, max_steps=6, batch_size=16, seed=0):
        torch.manual_seed(seed)
        self.loss_type, self.max_steps, self.batch_size = loss, max_steps, batch_size
        self.dnn_model = Net(input_dim, loss=loss)
        self.train_optimizer = torch.optim.Adam(self.dnn_model.parameters(), lr=lr)

    def get_loss(self, pred, w, target, loss_type):
        if loss_type == "mse":
            sqr_loss = torch.mul(pred - target, pred - target)
            return torch.mul(sqr_loss, w).mean()
        elif loss_type == "binary":
            loss = nn.BCELoss(weight=w)
            return loss(pred, target)  # BUG TRN502
        raise NotImplementedError(f"loss {loss_type} is not supported!")

    def fit(self, x_train, y_train, w_train):
        x_train, y_train, w_train = (torch.from_numpy(a).float() for a in (x_train, y_train, w_train))
        rng = np.random.default_rng(0)
        self.dnn_model.train()
        for step in range(self.max_steps):
            choice = torch.from_numpy(rng.choice(len(x_train), self.batch_size, replace=False))
            preds = self.dnn_model(x_train[choice])
            cur_loss = self.get_loss(preds, w_train[choice], y_train[choice], self.loss_type)
            self.train_optimizer.zero_grad()
            cur_loss.backward()
            self.train_optimizer.step()
        return self
