"""Noisy, distributional dueling Q-network: factorised Gaussian noise on the linear layers' weights."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, std_init=0.4):
        super().__init__()
        self.in_features, self.out_features, self.std_init = in_features, out_features, std_init
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer("weight_epsilon", torch.empty(out_features, in_features))
        self.register_buffer("bias_epsilon", torch.empty(out_features))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight_mu.uniform_(-bound, bound)
            self.weight_sigma.fill_(self.std_init / math.sqrt(self.in_features))
            self.bias_mu.uniform_(-bound, bound)
            self.bias_sigma.fill_(self.std_init / math.sqrt(self.out_features))

    @staticmethod
    def _scale_noise(size):
        x = torch.randn(size)
        return x.sign() * x.abs().sqrt()

    def reset_noise(self):
        epsilon_in, epsilon_out = self._scale_noise(self.in_features), self._scale_noise(self.out_features)
        self.weight_epsilon.copy_(torch.outer(epsilon_out, epsilon_in))
        self.bias_epsilon.copy_(self._scale_noise(self.out_features))

    def forward(self, x):
        if self.training:
            return F.linear(x, self.weight_mu + self.weight_sigma * self.weight_epsilon,
                            self.bias_mu + self.bias_sigma * self.bias_epsilon)
        return F.linear(x, self.weight_mu, self.bias_mu)


class DQN(nn.Module):
    def __init__(self, state_size, action_space, atoms, hidden_size=32, noisy_std=0.4):
        super().__init__()
        self.action_space, self.atoms = action_space, atoms
        self.fc_in = nn.Linear(state_size, hidden_size)
        self.fc_h = NoisyLinear(hidden_size, hidden_size, std_init=noisy_std)
        self.fc_z_v = NoisyLinear(hidden_size, atoms, std_init=noisy_std)
        self.fc_z_a = NoisyLinear(hidden_size, action_space * atoms, std_init=noisy_std)

    def forward(self, x, log=False):
        x = F.relu(self.fc_h(F.relu(self.fc_in(x))))
        v = self.fc_z_v(x).view(-1, 1, self.atoms)
        a = self.fc_z_a(x).view(-1, self.action_space, self.atoms)
        q = v + a - a.mean(1, keepdim=True)  # dueling streams combined
        return F.log_softmax(q, dim=2) if log else F.softmax(q, dim=2)

    def reset_noise(self):
        for name, module in self.named_children():
            if "fc_z" in name or name == "fc_h":
                module.reset_noise()
