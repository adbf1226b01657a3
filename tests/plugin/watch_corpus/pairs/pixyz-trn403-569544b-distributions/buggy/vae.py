import torch
from torch import nn
from torch.nn import functional as F

from distributions import Bernoulli, Normal, kl_divergence

torch.manual_seed(0)
x_dim, z_dim, hidden = 16, 2, 32


class Inference(Normal):  # q(z|x)
    def __init__(self):
        super().__init__(var=["z"], cond_var=["x"], name="q")
        self.fc1 = nn.Linear(x_dim, hidden)
        self.fc_loc, self.fc_scale = nn.Linear(hidden, z_dim), nn.Linear(hidden, z_dim)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return {"loc": self.fc_loc(h), "scale": F.softplus(self.fc_scale(h)) + 1e-4}


class Generator(Bernoulli):  # p(x|z)
    def __init__(self):
        super().__init__(var=["x"], cond_var=["z"], name="p")
        self.fc1, self.fc2 = nn.Linear(z_dim, hidden), nn.Linear(hidden, x_dim)

    def forward(self, z):
        return {"probs": torch.sigmoid(self.fc2(F.relu(self.fc1(z))))}


q, p = Inference(), Generator()
prior = Normal(var=["z"], name="p_prior", loc=torch.zeros(z_dim), scale=torch.ones(z_dim))

# watch the posterior's spread through a forward hook on q: a collapse shows as the scale going to 1
posterior_scales = []


def record_posterior_scale(module, inputs, output):
    posterior_scales.append(output["scale"].detach().mean())


q.register_forward_hook(record_posterior_scale)

data = (torch.rand(32, x_dim) < torch.linspace(0.1, 0.9, x_dim)).float()
optimizer = torch.optim.Adam([*q.parameters(), *p.parameters()], lr=1e-3)
for epoch in range(2):
    for i in range(0, len(data), 8):
        x_dict = q.sample({"x": data[i:i + 8]})
        loss = (kl_divergence(q, prior, x_dict) - p.log_prob(x_dict)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print(f"loss {loss.item():.3f}; posterior scale recorded {len(posterior_scales)} times")
