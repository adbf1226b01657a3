"""The examples of TRN804 (DdpModelMovedAfterWrap): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = Net().to(device)
        model = DDP(model, device_ids=[local_rank])
        """
    ),
    Valid(
        """
        # the inputs move, and the unwrapped model is moved after training ends
        import torch
        def train(rank):
            model = Net().cuda(rank)
            ddp_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
            for x, y in loader:
                x, y = x.to(rank), y.to(rank)
                loss = criterion(ddp_model(x), y)
            ddp_model = ddp_model.module
            ddp_model.cpu()
        """
    ),
    Valid(
        """
        # moved to the CPU once training is over, to save it
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def main(rank):
            model = DDP(Net().to(rank), device_ids=[rank])
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model = model.cpu()
            torch.save(model.module.state_dict(), "model.pt")
        """
    ),
    Valid(
        """
        # a different module, and DDP only on one branch
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        class Trainer:
            def __init__(self, model, teacher):
                self.model = DDP(model.to(self.device))
                self.teacher = teacher.to(self.device)
        if distributed:
            model = DDP(model)
        else:
            model = model.cuda()
        """
    ),
    Valid(
        """
        # the wrapped model replaced on every path before the move
        import torch.nn as nn
        def build(net, use_cuda, device):
            if use_cuda:
                net = nn.parallel.DistributedDataParallel(net)
            else:
                net = LocalAverager(net)
            net = Exported(net)
            net.to(device)
            return net
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=[local_rank])
        model.to(device)  # BUG
        """
    ),
    Invalid(
        """
        # moved inside the training loop, before the next iteration's step
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def main(rank):
            model = DDP(Net().to(rank), device_ids=[rank])
            for x, y in loader:
                model.to(rank)  # BUG
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        def build(args):
            net = nn.parallel.DistributedDataParallel(Net())
            net = net.cuda()  # BUG
            return net
        """
    ),
    Invalid(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel
        class Trainer:
            def __init__(self, model, device):
                self.model = DistributedDataParallel(model)
                self.model.module.to(device)  # BUG
        wrapped = DistributedDataParallel(Net()).cuda()  # BUG
        """
    ),
    Invalid(
        """
        # wrapped in one branch only, moved after the branches
        import torch.nn as nn
        def build(net, use_cuda, device):
            if use_cuda:
                net = nn.parallel.DistributedDataParallel(net)
            else:
                net = LocalAverager(net)
            net.to(device)  # BUG
            return net
        """
    ),
]
