import random
from types import SimpleNamespace

import torch

from agent import Agent


class Env:
    """A toy task: the reward is 1 when the action matches the sign of the state's first feature."""
    state_size, action_space, episode_length = 4, 2, 6

    def __init__(self, dtype):
        self.dtype, self.t = dtype, 0

    def reset(self):
        self.t = 0
        self.state = torch.randn(self.state_size, dtype=self.dtype)
        return self.state

    def step(self, action):
        reward = float(action == int(self.state[0] > 0))
        self.t += 1
        self.state = torch.randn(self.state_size, dtype=self.dtype)
        return self.state, reward, self.t >= self.episode_length


class ReplayMemory:
    def __init__(self, dtype):
        self.dtype, self.transitions = dtype, []

    def append(self, state, action, reward, next_state, done):
        self.transitions.append((state, action, reward, next_state, 0.0 if done else 1.0))

    def sample(self, batch_size):
        states, actions, rewards, next_states, nonterminals = zip(*random.sample(self.transitions, batch_size))
        return (torch.stack(states), torch.tensor(actions), torch.tensor(rewards, dtype=self.dtype),
                torch.stack(next_states), torch.tensor(nonterminals, dtype=self.dtype).unsqueeze(1))


args = SimpleNamespace(seed=123, atoms=11, V_min=-2.0, V_max=2.0, batch_size=8, discount=0.9, lr=1e-3,
                       learn_start=16, replay_frequency=2, target_update=8, T_max=40, accelerate=True)
random.seed(args.seed)
torch.manual_seed(random.randint(1, 10000))
dtype = torch.float64 if args.accelerate else torch.float32

env = Env(dtype)
dqn = Agent(args, env)
mem = ReplayMemory(dtype)

T, done = 0, True
while T < args.T_max:
    if done:
        state, done = env.reset(), False
        dqn.reset_noise()  # a new set of noisy weights for each episode
    action = dqn.act(state)
    next_state, reward, done = env.step(action)
    mem.append(state, action, reward, next_state, done)
    T += 1
    if T >= args.learn_start and T % args.replay_frequency == 0:
        loss = dqn.learn(mem)
        dqn.reset_noise()  # new noise after each optimisation
    if T % args.target_update == 0:
        dqn.update_target_net()
    state = next_state
print(f"{T} steps; last loss {float(loss):.3f}")
