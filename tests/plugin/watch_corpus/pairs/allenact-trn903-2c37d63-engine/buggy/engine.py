"""The on-policy RL engine: every training worker builds its own actor-critic and sums the gradients by hand."""
import random

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


def set_seed(seed=None):
    """Seed torch, random and numpy; with None the process keeps the state it has."""
    if seed is None:
        return
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


class OnPolicyTrainer:
    def __init__(self, config, worker_id, num_workers, seed=None):
        self.config, self.worker_id, self.num_workers = config, worker_id, num_workers
        self.seed = seed
        set_seed(self.seed)
        self.actor_critic = config.create_model()
        self.is_distributed = num_workers > 1
        self.optimizer = torch.optim.Adam(self.actor_critic.parameters(), lr=config.lr)
        # each worker steps its own environments
        self.env_rng = torch.Generator().manual_seed(1000 + worker_id)

    def collect_rollout(self, steps=16):
        obs = torch.randn(steps, self.config.obs_dim, generator=self.env_rng)
        actions = torch.randint(0, self.config.num_actions, (steps,), generator=self.env_rng)
        returns = torch.randn(steps, generator=self.env_rng)
        return obs, actions, returns

    def backprop_step(self, total_loss):
        self.optimizer.zero_grad()
        total_loss.backward()
        if self.is_distributed:
            pending = []
            for p in self.actor_critic.parameters():
                if p.requires_grad:
                    if p.grad is None:
                        p.grad = torch.zeros_like(p.data)
                    pending.append(dist.all_reduce(p.grad, async_op=True))  # sum over the workers
            for work in pending:
                work.wait()
        nn.utils.clip_grad_norm_(self.actor_critic.parameters(), self.config.max_grad_norm)
        self.optimizer.step()  # BUG TRN903

    def train(self, updates):
        for _ in range(updates):
            obs, actions, returns = self.collect_rollout()
            logits, values = self.actor_critic(obs)
            policy = torch.distributions.Categorical(logits=logits)
            advantages = returns - values.detach()
            action_loss = -(policy.log_prob(actions) * advantages).mean()
            value_loss = (returns - values).pow(2).mean()
            self.backprop_step(action_loss + 0.5 * value_loss - 0.01 * policy.entropy().mean())
