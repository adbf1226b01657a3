"""The actor side of a PPO trainer: clipped policy loss over experience batches."""
from dataclasses import dataclass

import torch


@dataclass
class Experience:
    states: torch.Tensor
    actions: torch.Tensor
    old_log_probs: torch.Tensor
    advantages: torch.Tensor


class PolicyLoss:
    def __init__(self, clip_eps=0.2):
        self.clip_eps = clip_eps

    def __call__(self, log_probs, old_log_probs, advantages):
        ratio = (log_probs - old_log_probs).exp()
        clipped = ratio.clamp(1 - self.clip_eps, 1 + self.clip_eps) * advantages
        return -torch.min(ratio * advantages, clipped).mean()


class ActorPPOTrainer:
    def __init__(self, actor, lr=1e-3):
        self.actor = actor
        self.actor_optim = torch.optim.AdamW(actor.parameters(), lr=lr)
        self.actor_loss_fn = PolicyLoss()

    def ppo_train(self, replay_buffer, epochs=2):
        status = []
        for epoch in range(epochs):
            for global_steps, experience in enumerate(replay_buffer):
                status.append(self.training_step(experience, global_steps))
        return status

    def training_step(self, experience, global_steps):
        torch.cuda.empty_cache()  # BUG TRN202
        status = self.training_step_actor(experience)
        torch.cuda.empty_cache()  # BUG TRN202
        return status

    def training_step_actor(self, experience):
        self.actor.train()
        logits = self.actor(experience.states)
        log_probs = torch.log_softmax(logits, -1).gather(-1, experience.actions[:, None]).squeeze(-1)
        loss = self.actor_loss_fn(log_probs, experience.old_log_probs, experience.advantages)
        loss.backward()
        self.actor_optim.step()
        self.actor_optim.zero_grad()
        return {"policy_loss": loss.detach()}
