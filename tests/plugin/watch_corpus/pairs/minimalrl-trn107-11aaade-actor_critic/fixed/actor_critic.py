"""Vanilla actor-critic on a toy corridor: losses gathered over a rollout, one update per rollout."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical

gamma = 0.98
n_rollout = 5


class Corridor:
    """Walk left or right on 6 cells; reward 1 at the right end. Kept in tensors: no host sync per move."""

    def reset(self):
        self.pos = torch.tensor(0)
        return self.obs()

    def obs(self):
        return F.one_hot(self.pos, 6).float()

    def step(self, action):
        self.pos = (self.pos + 2 * action - 1).clamp(0, 5)
        done = (self.pos == 5).float()
        return self.obs(), done, done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss_lst = []
        self.fc1 = nn.Linear(6, 16)
        self.fc_pi = nn.Linear(16, 2)
        self.fc_v = nn.Linear(16, 1)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=0.01)

    def pi(self, x):
        return F.softmax(self.fc_pi(F.relu(self.fc1(x))), dim=-1)

    def v(self, x):
        return self.fc_v(F.relu(self.fc1(x)))

    def gather_loss(self, s, a, r, s_prime, done):
        td_target = r + gamma * self.v(s_prime) * (1 - done)
        delta = td_target - self.v(s)
        pi_a = self.pi(s)[a]
        loss = -torch.log(pi_a) * delta.detach() + F.smooth_l1_loss(self.v(s), td_target.detach())
        self.loss_lst.append(loss)

    def train_net(self):
        loss = torch.cat(self.loss_lst).sum()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.loss_lst = []


torch.manual_seed(0)
env, model = Corridor(), ActorCritic()
for episode in range(3):
    s = env.reset()
    for rollout in range(3):
        for _ in range(n_rollout):
            a = Categorical(model.pi(s)).sample()
            s_prime, r, done = env.step(a)
            model.gather_loss(s, a, r, s_prime, done)
            s = s_prime
        model.train_net()
print("trained 3 episodes")
