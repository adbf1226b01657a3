"""The examples of TRN403 (ForwardCalledDirectly): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import UNSAFE, Invalid, Valid

VALID = [
    Valid(
        """
        import torch.nn as nn
        class Bottle(nn.Linear):
            def forward(self, x):
                if x.dim() <= 2:
                    return super().forward(x)
                return super(Bottle, self).forward(x.flatten(0, 1))

        class Wrapped(nn.Sequential):
            def forward(self, x):
                return nn.Sequential.forward(self, x)
        """
    ),
    Valid(
        """
        import torch
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

        y = Square.forward(None, x)
        out = model(x)
        traced = torch.jit.trace(model.forward, x)
        """
    ),
    Valid(
        """
        # self.forward in the module's own methods: the caller went through the wrapper
        import torch
        from torch import nn
        class Classifier(nn.Module):
            def forward(self, x):
                return x.mean(1)

            def predict(self, x):
                return self.forward(x).argmax(1)

            def features(self, x):
                if torch.jit.is_scripting():
                    return self.body.forward(x)
                return self.body(x)
        """
    ),
    Valid(
        """
        # a test of the module's forward itself
        import unittest
        import torch
        def test_forward_shape():
            net = torch.nn.Linear(4, 2)
            assert net.forward(torch.ones(1, 4)).shape == (1, 2)

        class TestNet(unittest.TestCase):
            def check(self):
                model = torch.nn.Linear(4, 2)
                self.assertEqual(model.forward(torch.ones(1, 4)).shape[1], 2)
        """
    ),
    Valid(
        """
        # not modules: an RPC module reference and a plain object
        from torch.distributed.nn import RemoteModule
        class Trainer:
            def __init__(self):
                self.remote_emb = RemoteModule("ps", torch.nn.EmbeddingBag, (10, 3))
                self.pipeline = Pipeline()

            def step(self, x):
                return self.pipeline.forward(self.remote_emb.forward(x))
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(8, 8)
                self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

            def forward(self, x):
                x = self.encoder.forward(x)  # BUG
                for layer in self.layers:
                    x = layer.forward(x)  # BUG
                head = self.layers[-1]
                x = head.forward(x)  # BUG
                return self.layers[0].forward(x)  # BUG
        """,
        fixed="""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(8, 8)
                self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

            def forward(self, x):
                x = self.encoder(x)  # BUG
                for layer in self.layers:
                    x = layer(x)  # BUG
                head = self.layers[-1]
                x = head(x)  # BUG
                return self.layers[0](x)  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model.forward(x), y)  # BUG
                loss.backward()
                optimizer.step()
        """,
        fixed="""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)  # BUG
                loss.backward()
                optimizer.step()
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        from torch import nn
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(4, 2)

            def forward(self, x):
                return x.mean(1)

            def predict(self, x):
                return self.head.forward(x).argmax(1)  # BUG

        net = nn.parallel.DistributedDataParallel(Classifier())
        out = net.module.forward(x)  # BUG
        """,
        fixed="""
        from torch import nn
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(4, 2)

            def forward(self, x):
                return x.mean(1)

            def predict(self, x):
                return self.head(x).argmax(1)  # BUG

        net = nn.parallel.DistributedDataParallel(Classifier())
        out = net.module(x)  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        # built by a factory out of sight, known as a module by its parameters() call
        import torch
        class Agent:
            def __init__(self, make_actor):
                self.actor = make_actor()
                self.opt = torch.optim.Adam(self.actor.parameters(), lr=1e-3)

            def act(self, obs):
                return self.actor.forward(obs)  # BUG
        """,
        fixed="""
        # built by a factory out of sight, known as a module by its parameters() call
        import torch
        class Agent:
            def __init__(self, make_actor):
                self.actor = make_actor()
                self.opt = torch.optim.Adam(self.actor.parameters(), lr=1e-3)

            def act(self, obs):
                return self.actor(obs)  # BUG
        """,
        applicability=UNSAFE,
    ),
]
