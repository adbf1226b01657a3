"""The examples of TRN401 (UnregisteredSubmodules): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import UNSAFE, Invalid, Valid

VALID = [
    Valid(
        """
        # a class of this file made only of layers without state: a plain list of them loses nothing
        import torch
        import torch.nn as nn
        class Smoothing(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.width = width
                self.pool = nn.AvgPool1d(width, stride=1, padding=(width - 1) // 2)

            def forward(self, x):
                return self.pool(x)

        class MultiScale(nn.Module):
            def __init__(self, widths):
                super().__init__()
                self.smoothers = [Smoothing(w) for w in widths]
                self.mix = nn.Linear(len(widths), 1)

            def forward(self, x):
                parts = torch.stack([s(x) for s in self.smoothers], dim=-1)
                return self.mix(parts).squeeze(-1)
        """
    ),
    Valid(
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])
                self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})
                self.sizes = [8, 16, 32]
                self.names = ("a", "b")
                self.anchors = [torch.zeros(4), torch.ones(4)]
        """
    ),
    Valid(
        """
        # built in a list, then wrapped or unpacked into a registering container
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = []
                for _ in range(n):
                    self.blocks.append(nn.Linear(8, 8))
                self.blocks = nn.ModuleList(self.blocks)
                self.stages = [nn.Conv2d(3, 3, 3), nn.ReLU()]
                self.body = nn.Sequential(*self.stages)
        """
    ),
    Valid(
        """
        # a list of registered attributes, runtime caches, and a non-module class
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(8, 8)
                self.dec = nn.Linear(8, 8)
                self.parts = [self.enc, self.dec]
                self.features = []

            def forward(self, x):
                self.features.append(self.enc(x))
                return self.dec(self.features[-1])

        class Builder:
            def __init__(self):
                self.layers = [nn.Linear(8, 8) for _ in range(3)]
        """
    ),
    Valid(
        """
        # registered one by one with add_module
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = [nn.Linear(8, 8) for _ in range(n)]
                for i, layer in enumerate(self.layers):
                    self.add_module(f"layer{i}", layer)
        """
    ),
    Valid(
        """
        # annotated containers: registered, of names, or of modules never added
        from typing import List, Optional
        import torch.nn as nn
        class Parallel(nn.Module):
            def __init__(self, layers, names):
                super().__init__()
                self.branches: Optional[nn.ModuleList] = None
                if layers:
                    self.branches = nn.ModuleList()
                    for layer in layers:
                        self.branches.append(layer)
                self.names: List[str] = []
                for n in names:
                    self.names.append(n)
                self.hooks: List[nn.Module] = []
        """
    ),
    Valid(
        """
        # layers with nothing to train, move or switch to eval; loaders kept by data modules
        import torch.nn as nn
        import pytorch_lightning as pl
        class Pyramid(nn.Module):
            def __init__(self, scales):
                super().__init__()
                self.pools = [nn.AvgPool2d(2 ** s, 2 ** s) for s in range(scales)]
                self.acts = {"relu": nn.ReLU(), "none": nn.Identity()}

        class Loaders(pl.LightningDataModule):
            pass

        class Runner(nn.Module):
            def __init__(self):
                super().__init__()
                self.datamodules = {"train": Loaders()}
        """
    ),
    Valid(
        """
        # registered one by one and listed for bookkeeping only: forward never reads the list
        import torch.nn as nn
        class Adapters(nn.Module):
            def __init__(self, names, width):
                super().__init__()
                self.adapters = []
                for name in names:
                    adapter = nn.Linear(width, width)
                    self.add_module(name, adapter)
                    self.adapters.append(adapter)

            def merge(self):
                for adapter in self.adapters:
                    adapter.weight.data.zero_()
        """
    ),
]

INVALID = [
    Invalid(
        """
        # modules passed in, kept in a list the class annotates as holding modules
        from typing import List, Optional
        import torch
        import torch.nn as nn
        class Parallel(nn.Module):
            def __init__(self, layers):
                super().__init__()
                self.branches: Optional[List[nn.Module]] = None
                if layers:
                    self.branches = []  # BUG
                    for layer in layers:
                        self.branches.append(layer)

            def forward(self, x):
                return torch.cat([b(x) for b in self.branches], dim=-1)
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = [nn.Linear(8, 8) for _ in range(n)]  # BUG
                self.heads = {"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)}  # BUG

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.heads["a"](x)
        """,
        fixed="""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])  # BUG
                self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})  # BUG

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.heads["a"](x)
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

        class Net(Block):
            def __init__(self, n):
                super().__init__()
                self.blocks = []  # BUG
                for _ in range(n):
                    self.blocks.append(Block())
                self.pair = (nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))  # BUG
        """,
        fixed="""
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

        class Net(Block):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([])  # BUG
                for _ in range(n):
                    self.blocks.append(Block())
                self.pair = nn.ModuleList((nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)))  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Mixture(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.scales = [nn.Parameter(torch.ones(8)) for _ in range(k)]  # BUG
                offsets = []
                for _ in range(k):
                    offsets.append(torch.zeros(8, requires_grad=True))
                self.offsets = offsets  # BUG
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Mixture(nn.Module):
            def __init__(self, k):
                super().__init__()
                self.scales = nn.ParameterList([nn.Parameter(torch.ones(8)) for _ in range(k)])  # BUG
                offsets = []
                for _ in range(k):
                    offsets.append(torch.zeros(8, requires_grad=True))
                self.offsets = offsets  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        # no fix: a tensor that is not a parameter, a repeated module, no torch.nn import
        import torch
        from torch.nn import Linear
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mixed = [Linear(2, 2), torch.zeros(2, requires_grad=True)]  # BUG
                self.same = [Linear(2, 2)] * 3  # BUG
        from torch.nn import Module
        class Other(Module):
            def __init__(self):
                super().__init__()
                self.layers = [Linear(2, 2)]  # BUG
        """,
        fixed="""
        # no fix: a tensor that is not a parameter, a repeated module, no torch.nn import
        import torch
        from torch.nn import Linear
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mixed = [Linear(2, 2), torch.zeros(2, requires_grad=True)]  # BUG
                self.same = [Linear(2, 2)] * 3  # BUG
        from torch.nn import Module
        class Other(Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList([Linear(2, 2)])  # BUG
        """,
        applicability=UNSAFE,
    ),
    Invalid(
        """
        # an empty list() grown with +=
        import torch
        class Predictor(torch.nn.Module):
            def __init__(self, depth):
                super().__init__()
                self.layers = torch.nn.ModuleList()
                self.norms = list()  # BUG
                for _ in range(depth):
                    self.layers += [torch.nn.Conv1d(8, 8, 3)]
                    self.norms += [torch.nn.LayerNorm(8)]
        """
    ),
    Invalid(
        """
        # the layers come from a helper of this file that collects them in a plain list
        import torch.nn as nn
        def create_modules(blocks):
            info = blocks[0]
            module_list = []
            for block in blocks[1:]:
                module = nn.Sequential()
                module.add_module("conv", nn.Conv2d(block, block, 3))
                module_list.append(module)
            return info, module_list

        def make_heads(n):
            heads = [nn.Linear(n, 1) for _ in range(3)]
            return heads

        class Darknet(nn.Module):
            def __init__(self, blocks, n):
                super().__init__()
                self.info, self.module_list = create_modules(blocks)  # BUG
                self.heads = make_heads(n)  # BUG
        """
    ),
    Invalid(
        """
        # registered one by one, and iterated from a plain list in forward: DataParallel replicas
        # run the original blocks
        import torch.nn as nn
        class Encoder(nn.Module):
            def __init__(self, n, width):
                super().__init__()
                self._blocks = []  # BUG
                for i in range(n):
                    block = nn.Linear(width, width)
                    self.add_module(f"block_{i}", block)
                    self._blocks.append(block)

            def forward(self, x):
                for block in self._blocks:
                    x = block(x)
                return x
        """
    ),
]
