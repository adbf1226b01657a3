"""The examples of TRN304 (CheckpointSavedOnEveryRank): VALID must stay quiet, INVALID is flagged on every
line marked ``# BUG`` and nowhere else."""

from __future__ import annotations

from lint_rules.rule import Invalid, Valid

VALID = [
    Valid(
        """
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        for epoch in range(epochs):
            train_one_epoch(model, loader, optimizer)
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), "ckpt.pt")
            dist.barrier()
        """
    ),
    Valid(
        """
        # a flag set from the global rank, an early return, and a guarded helper
        import os
        import torch
        from torch.distributed import init_process_group
        init_process_group(backend="nccl")
        ddp_rank = int(os.environ["RANK"])
        master_process = ddp_rank == 0

        def save_snapshot(state, path):
            torch.save(state, path)

        def save_best(state):
            if not is_main_process():
                return
            torch.save(state, "best.pt")

        for it in range(max_iters):
            step()
            if it % eval_interval == 0 and master_process:
                torch.save(raw_model.state_dict(), "ckpt.pt")
                save_snapshot(raw_model.state_dict(), "snapshot.pt")
        """
    ),
    Valid(
        """
        # per-rank shards, an in-memory buffer, and a file without a process group
        import io
        import torch
        import torch.distributed as dist
        def worker(rank, world_size):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
            torch.save(optimizer.state_dict(), f"optim_rank{rank}.pt")
            buffer = io.BytesIO()
            torch.save(obj, buffer)
        class Trainer:
            def train(self, epochs):
                for epoch in range(epochs):
                    self._run_epoch(epoch)
                    if self.global_rank == 0 and epoch % self.save_every == 0:
                        self._save(epoch)
            def _save(self, epoch):
                torch.save(self.model.module.state_dict(), "ckpt.pt")
        """
    ),
    Valid(
        """
        # a rank-zero-only decorator, and a rank check in the else branch
        import torch
        torch.distributed.init_process_group("nccl")
        @rank_zero_only
        def save(model):
            torch.save(model.state_dict(), "model.pt")
        if torch.distributed.get_rank() != 0:
            pass
        else:
            torch.save(model.state_dict(), "final.pt")
        """
    ),
]

INVALID = [
    Invalid(
        """
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        for epoch in range(epochs):
            train_one_epoch(model, loader, optimizer)
            torch.save(model.module.state_dict(), "ckpt.pt")  # BUG
        """
    ),
    Invalid(
        """
        # a local-rank guard: one writer per node
        import os
        import torch
        from torch.distributed import init_process_group
        class Trainer:
            def __init__(self):
                init_process_group(backend="nccl")
                self.gpu_id = int(os.environ["LOCAL_RANK"])

            def _save_snapshot(self, epoch):
                torch.save({"epoch": epoch}, "snapshot.pt")  # BUG

            def train(self, epochs):
                for epoch in range(epochs):
                    if self.gpu_id == 0:
                        self._save_snapshot(epoch)
                if args.local_rank == 0:
                    torch.save(self.model.state_dict(), "final.pt")  # BUG
        """
    ),
    Invalid(
        """
        # the worker function runs on every rank and the helper is called unguarded
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        from torch import save as save_file

        def checkpoint(model, path):
            save_file(model.state_dict(), path)  # BUG

        def worker(rank, world_size):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
            train(model)
            checkpoint(model, "model.pt")

        mp.spawn(worker, args=(2,), nprocs=2)
        """
    ),
    Invalid(
        """
        # a per-node guard in the imagenet style
        import torch
        import torch.distributed as dist
        dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url)
        for epoch in range(args.epochs):
            train(loader, model)
            if not args.distributed or args.rank % ngpus_per_node == 0:
                torch.save(model.state_dict(), "checkpoint.pth.tar")  # BUG
        """
    ),
]
