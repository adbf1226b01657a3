"""Train a denoiser; with opt['dist'] every process reads its own share of the data."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from model_plain import ModelPlain


class NoisyPatches(Dataset):
    def __init__(self, n=16, sigma=0.1):
        generator = torch.Generator().manual_seed(3)
        self.H = torch.rand(n, 1, 8, 8, generator=generator)
        self.L = self.H + sigma * torch.randn(n, 1, 8, 8, generator=generator)

    def __len__(self):
        return len(self.H)

    def __getitem__(self, index):
        return {"L": self.L[index], "H": self.H[index]}


def init_dist():
    """One process, or each of torchrun's: the group the sampler reads its rank and world size from."""
    if dist.is_torchelastic_launched():
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def main():
    opt = {"dist": True, "train": {"G_optimizer_lr": 1e-3, "checkpoint_print": 4},
           "datasets": {"train": {"dataloader_batch_size": 4, "dataloader_shuffle": True}}}
    if opt["dist"]:
        init_dist()
    torch.manual_seed(0)

    dataset_opt = opt["datasets"]["train"]
    train_set = NoisyPatches()
    if opt["dist"]:
        train_sampler = DistributedSampler(train_set, shuffle=dataset_opt["dataloader_shuffle"], drop_last=True, seed=0)
        train_loader = DataLoader(train_set, batch_size=dataset_opt["dataloader_batch_size"], shuffle=False,
                                  drop_last=True, sampler=train_sampler)
    else:
        train_loader = DataLoader(train_set, batch_size=dataset_opt["dataloader_batch_size"],
                                  shuffle=dataset_opt["dataloader_shuffle"], drop_last=True)

    model = ModelPlain(opt)
    model.init_train()
    current_step = 0
    for epoch in range(2):
        if opt["dist"]:
            train_sampler.set_epoch(epoch)

        for i, train_data in enumerate(train_loader):
            current_step += 1
            model.feed_data(train_data)
            model.optimize_parameters(current_step)
            model.update_learning_rate(current_step)
            if current_step % opt["train"]["checkpoint_print"] == 0:
                print(f"epoch {epoch} iter {current_step} G_loss {float(model.log['G_loss']):.4f}")
    if opt["dist"]:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
