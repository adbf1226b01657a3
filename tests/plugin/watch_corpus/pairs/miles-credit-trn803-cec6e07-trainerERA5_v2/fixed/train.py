import torch
import torch.nn.functional as F
from torch import nn

from trainerERA5_v2 import Trainer

torch.manual_seed(0)
conf = {"trainer": {"batches_per_epoch": 3, "grad_max_norm": 1.0, "amp": True, "mode": "none", "epochs": 2}}
fields = torch.randn(13, 4, 6, 6)
trainloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(fields[:-1], fields[1:]), batch_size=4)
model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.GELU(), nn.Conv2d(8, 4, 3, padding=1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=conf["trainer"]["epochs"])
scaler = torch.amp.GradScaler("cpu", enabled=conf["trainer"]["amp"])
trainer = Trainer(model)
for epoch in range(conf["trainer"]["epochs"]):
    result = trainer.train_one_epoch(epoch, conf, trainloader, optimizer, F.mse_loss, scaler, scheduler)
    print(f"epoch {epoch}: train loss {float(result['train_loss']):.4f}")
