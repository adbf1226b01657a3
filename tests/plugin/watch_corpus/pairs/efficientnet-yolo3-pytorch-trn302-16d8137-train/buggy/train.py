"""Train an EfficientNet-YOLOv3-style detector; distributed runs shard the data with DistributedSampler."""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from utils_fit import fit_one_epoch


def set_optimizer_lr(optimizer, lr_scheduler_func, epoch):
    for group in optimizer.param_groups:
        group["lr"] = lr_scheduler_func(epoch)


if __name__ == "__main__":
    distributed = True
    if dist.is_torchelastic_launched():
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    local_rank = dist.get_rank()
    torch.manual_seed(0)

    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.SiLU(), nn.Conv2d(8, 7, 1))
    model_train = model
    yolo_loss = lambda outputs, targets: F.mse_loss(outputs, targets)  # noqa: E731 (the loss object's stand-in)
    train_dataset = TensorDataset(torch.randn(16, 3, 8, 8), torch.randn(16, 7, 4, 4))
    val_dataset = TensorDataset(torch.randn(8, 3, 8, 8), torch.randn(8, 7, 4, 4))
    batch_size, UnFreeze_Epoch = 4, 2
    train_sampler = DistributedSampler(train_dataset, shuffle=True)
    val_sampler = DistributedSampler(val_dataset, shuffle=False)
    gen = DataLoader(train_dataset, batch_size=batch_size, drop_last=True, sampler=train_sampler)
    gen_val = DataLoader(val_dataset, batch_size=batch_size, drop_last=True, sampler=val_sampler)
    epoch_step, epoch_step_val = len(gen), len(gen_val)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.937, nesterov=True)
    lr_scheduler_func = lambda epoch: 1e-2 * (0.5 ** epoch)  # noqa: E731
    loss_history = []

    for epoch in range(UnFreeze_Epoch):
        set_optimizer_lr(optimizer, lr_scheduler_func, epoch)

        fit_one_epoch(model_train, model, yolo_loss, loss_history, optimizer, epoch, epoch_step, epoch_step_val, gen,
                      gen_val, UnFreeze_Epoch, local_rank)
    dist.destroy_process_group()
