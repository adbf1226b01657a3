"""Train an actor-critic with one training worker per process (torchrun), the runner starting each worker."""
import torch.distributed as dist
from torch import nn

from engine import OnPolicyTrainer


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, num_actions, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.actor(h), self.critic(h).squeeze(-1)


class ExperimentConfig:
    obs_dim, num_actions, lr, max_grad_norm = 8, 4, 3e-4, 0.5

    def create_model(self):
        return ActorCritic(self.obs_dim, self.num_actions)


class OnPolicyRunner:
    def __init__(self, config, seed=None):
        self.config = config
        self.seed = seed

    def start_train(self, updates=4):
        worker_id, num_workers = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
        trainer = OnPolicyTrainer(self.config, worker_id, num_workers, seed=self.seed)
        trainer.train(updates)


if __name__ == "__main__":
    if dist.is_torchelastic_launched():
        dist.init_process_group("gloo")
    OnPolicyRunner(ExperimentConfig()).start_train()  # no --seed given
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
