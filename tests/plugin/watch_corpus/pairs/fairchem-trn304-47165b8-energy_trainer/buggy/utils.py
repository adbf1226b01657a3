"""Shared helpers: checkpoints and the distributed queries the trainers use."""
import os

import torch
import torch.distributed as dist


def save_checkpoint(state, checkpoint_dir, checkpoint_file="checkpoint.pt"):
    filename = os.path.join(checkpoint_dir, checkpoint_file)
    torch.save(state, filename)  # BUG TRN304
    return filename


def is_master():
    return not dist.is_initialized() or dist.get_rank() == 0
