import torch
from torch import nn

from model import DQN


class Agent:
    def __init__(self, args, env):
        self.action_space = env.action_space
        self.atoms, self.Vmin, self.Vmax = args.atoms, args.V_min, args.V_max
        self.support = torch.linspace(args.V_min, args.V_max, args.atoms)  # the values the atoms stand for
        self.delta_z = (args.V_max - args.V_min) / (args.atoms - 1)
        self.batch_size, self.discount = args.batch_size, args.discount

        self.policy_net = DQN(env.state_size, self.action_space, args.atoms)
        self.policy_net.train()
        self.target_net = DQN(env.state_size, self.action_space, args.atoms)
        self.update_target_net()
        self.target_net.eval()

        self.optimiser = torch.optim.Adam(self.policy_net.parameters(), lr=args.lr, eps=1.5e-4)
        if args.accelerate:
            # the original moves both networks with .cuda(); on CPU a cast stands in for that move
            self.policy_net.double()
            self.target_net.double()
            self.support = self.support.double()

    def reset_noise(self):
        self.policy_net.reset_noise()
        self.target_net.reset_noise()

    def act(self, state):
        with torch.no_grad():
            return int((self.policy_net(state.unsqueeze(0)) * self.support).sum(2).argmax(1)[0])

    def learn(self, mem):
        states, actions, rewards, next_states, nonterminals = mem.sample(self.batch_size)
        log_ps_a = self.policy_net(states, log=True)[range(self.batch_size), actions]

        with torch.no_grad():
            best = (self.policy_net(next_states) * self.support).sum(2).argmax(1)  # double-Q: pick by policy
            pns_a = self.target_net(next_states)[range(self.batch_size), best]  # evaluate by target
            Tz = rewards.unsqueeze(1) + nonterminals * self.discount * self.support.unsqueeze(0)
            b = (Tz.clamp(self.Vmin, self.Vmax) - self.Vmin) / self.delta_z
            l, u = b.floor().long(), b.ceil().long()
            l[(u > 0) & (l == u)] -= 1
            u[(l < self.atoms - 1) & (l == u)] += 1
            m = torch.zeros_like(pns_a)
            offset = (torch.arange(self.batch_size) * self.atoms).unsqueeze(1)
            m.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u - b)).view(-1))
            m.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l)).view(-1))

        loss = -torch.sum(m * log_ps_a, 1).mean()  # cross-entropy to the projected target distribution
        self.optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.policy_net.parameters(), 10)
        self.optimiser.step()
        return loss.detach()

    def update_target_net(self):
        self.target_net.load_state_dict(self.policy_net.state_dict())
