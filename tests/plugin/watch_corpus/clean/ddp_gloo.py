"""Data-parallel training with DistributedDataParallel on the gloo backend.

Under ``torchrun --nproc-per-node 2`` each process trains its shard; run plainly it falls back to one process
(a world of one, in memory). Every epoch reshuffles (set_epoch), only rank 0 writes the checkpoint and the
others wait for it, and every rank leaves the group at the end."""
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup():
    if dist.is_torchelastic_launched():
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    return dist.get_rank(), dist.get_world_size()


def main():
    rank, world_size = setup()
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    dataset = TensorDataset(torch.randn(32, 10), torch.randint(0, 3, (32,)))
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
    ddp_model = DDP(model)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1, momentum=0.9)
    checkpoint_dir = [tempfile.mkdtemp() if rank == 0 else None]
    dist.broadcast_object_list(checkpoint_dir)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        total = torch.zeros(())
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(ddp_model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean loss {float(total) / (len(loader) * world_size):.4f}")
            torch.save(model.state_dict(), os.path.join(checkpoint_dir[0], "model.pt"))
        dist.barrier()  # nobody reads the checkpoint before rank 0 has written it
    state = torch.load(os.path.join(checkpoint_dir[0], "model.pt"), weights_only=True)
    model.load_state_dict(state)
    dist.barrier()
    if rank == 0:
        os.remove(os.path.join(checkpoint_dir[0], "model.pt"))
        os.rmdir(checkpoint_dir[0])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
