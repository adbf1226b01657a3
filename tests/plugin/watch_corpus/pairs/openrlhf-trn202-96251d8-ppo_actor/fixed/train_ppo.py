import torch
from torch import nn

from ppo_actor import ActorPPOTrainer, Experience

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
buffer = []
for _ in range(3):
    states = torch.randn(8, 6)
    with torch.no_grad():
        actions = torch.distributions.Categorical(logits=actor(states)).sample()
        old = torch.log_softmax(actor(states), -1).gather(-1, actions[:, None]).squeeze(-1)
    buffer.append(Experience(states, actions, old, torch.randn(8)))
status = ActorPPOTrainer(actor).ppo_train(buffer)
print("last policy loss", float(status[-1]["policy_loss"]))
