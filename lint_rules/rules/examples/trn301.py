"""The examples of TRN301 (DataParallel): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        # a test of the DataParallel path itself
        import torch
        def test_wrapper_keeps_outputs():
            net = torch.nn.Linear(2, 2)
            wrapped = torch.nn.DataParallel(net)
            assert wrapped.module is net
        """
    ),
    Valid(
        """
        import torch.nn as nn
        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
        """
    ),
    Valid(
        """
        # isinstance checks unwrap models that others wrapped
        from torch import nn
        raw = model.module if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)) else model
        """
    ),
    Valid(
        """
        # a local class that happens to share the name
        import torch
        class DataParallel:
            def __init__(self, m):
                self.m = m
        wrapped = DataParallel(model)
        """
    ),
    Valid(
        """
        import torch
        def wrap(torch, model):
            return torch.nn.DataParallel(model)  # `torch` here is a parameter, not the module
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        model = torch.nn.DataParallel(model)  # BUG
        """
    ),
    Invalid(
        """
        from torch.nn.parallel.data_parallel import DataParallel as DP
        model = DP(model, device_ids=[0, 1])  # BUG
        """
    ),
    Invalid(
        """
        import torch.nn.parallel as par
        class Wrapper(par.DataParallel):  # BUG
            pass
        """
    ),
    Invalid(
        """
        import torch.nn as nn
        Parallel = nn.DataParallel
        net = Parallel(net)  # BUG
        """
    ),
    Invalid(
        """
        # every spawned process wraps the model over every GPU
        import torch
        from torch import multiprocessing
        def run(local_rank, cfg):
            net = build(cfg).to(local_rank)
            net = torch.nn.DataParallel(net)  # BUG
            train(net, cfg)
        if __name__ == "__main__":
            multiprocessing.spawn(run, args=(cfg,), nprocs=torch.cuda.device_count())
        """
    ),
    Invalid(
        """
        # wrapped again on every epoch: the wrapper of the wrapper of ...
        import torch.nn as nn
        for epoch in range(epochs):
            self.net = nn.DataParallel(module=self.net)  # BUG
            fit_one_epoch(self.net, loader)
        """
    ),
    Invalid(
        """
        # each process draws its own shard, and nothing averages the replicas' gradients
        import torch
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        def main(dataset, net, opt, crit, epochs):
            sampler = DistributedSampler(dataset)
            batches = DataLoader(dataset, batch_size=64, sampler=sampler)
            net = torch.nn.DataParallel(net)  # BUG
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                for inputs, targets in batches:
                    opt.zero_grad()
                    crit(net(inputs), targets).backward()
                    opt.step()
        """
    ),
]
