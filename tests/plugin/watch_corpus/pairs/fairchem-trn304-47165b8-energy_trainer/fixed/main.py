import shutil
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import TensorDataset

import utils
from energy_trainer import EnergyTrainer

if dist.is_torchelastic_launched():
    dist.init_process_group("gloo")
torch.manual_seed(0)
checkpoint_dir = [tempfile.mkdtemp() if utils.is_master() else None]
if dist.is_initialized():
    dist.broadcast_object_list(checkpoint_dir)
model = nn.Sequential(nn.Linear(9, 32), nn.SiLU(), nn.Linear(32, 1))
structures = torch.randn(24, 9)
train_set = TensorDataset(structures[:16], structures[:16].sum(-1))
val_set = TensorDataset(structures[16:], structures[16:].sum(-1))
EnergyTrainer(model, train_set, val_set, checkpoint_dir[0]).train()
if dist.is_initialized():
    dist.barrier()
if utils.is_master():
    shutil.rmtree(checkpoint_dir[0])
if dist.is_initialized():
    dist.destroy_process_group()
