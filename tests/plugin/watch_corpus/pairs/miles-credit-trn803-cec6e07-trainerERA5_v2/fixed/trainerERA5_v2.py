"""Weather-model trainer: multi-step rollouts, mixed precision, gradient clipping."""
import torch


class Trainer:
    def __init__(self, model, rank=0):
        self.model, self.rank = model, rank

    def train_one_epoch(self, epoch, conf, trainloader, optimizer, criterion, scaler, scheduler):
        batches_per_epoch = conf["trainer"]["batches_per_epoch"]
        grad_max_norm = conf["trainer"]["grad_max_norm"]
        amp = conf["trainer"]["amp"]
        distributed = conf["trainer"]["mode"] in ("fsdp", "ddp")
        results = []
        self.model.train()
        dl = iter(trainloader)
        for steps in range(batches_per_epoch):
            x, y = next(dl)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=amp):
                y_pred = self.model(x)
                loss = criterion(y_pred.float(), y)
            scaler.scale(loss).backward()

            if distributed:
                torch.distributed.barrier()

            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=grad_max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            results.append(loss.detach())
        scheduler.step()
        return {"train_loss": torch.stack(results).mean()}
