"""A tiny one-stage detector trained the way the YOLOv3 script of the time did, cache flush included."""
import argparse
import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn


class YOLOLayer(nn.Module):
    def __init__(self, channels, n_outputs=6):
        super().__init__()
        self.pred = nn.Conv2d(channels, n_outputs, 1)
        self.metrics = {}

    def forward(self, x, targets=None):
        out = self.pred(x)
        if targets is None:
            return out
        loss = F.mse_loss(out[:, :4], targets[:, :4]) + F.binary_cross_entropy_with_logits(out[:, 4:], targets[:, 4:])
        self.metrics["loss"] = loss.detach()
        return out, loss


class Darknet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.1), nn.MaxPool2d(2))
        self.yolo_layers = nn.ModuleList([YOLOLayer(8)])
        self.seen = 0

    def forward(self, x, targets=None):
        features = self.backbone(x)
        outputs = [layer(features, targets) for layer in self.yolo_layers]
        return sum(loss for _, loss in outputs), [out for out, _ in outputs]


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--checkpoint_interval", type=int, default=1)
opt = parser.parse_args()

torch.manual_seed(0)
imgs_all = torch.randn(12, 3, 8, 8)
targets_all = torch.rand(12, 6, 4, 4)
dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(imgs_all, targets_all), batch_size=4)
model = Darknet()
model.train()
optimizer = torch.optim.Adam(model.parameters())
checkpoints_dir = tempfile.TemporaryDirectory()
checkpoints = checkpoints_dir.name

metrics = ["loss"]
for epoch in range(opt.epochs):
    for batch_i, (imgs, targets) in enumerate(dataloader):
        batches_done = len(dataloader) * epoch + batch_i
        loss, outputs = model(imgs, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        log = {name: [layer.metrics.get(name) for layer in model.yolo_layers] for name in metrics}
        model.seen += imgs.size(0)
        torch.cuda.empty_cache()  # BUG TRN202
    if epoch % opt.checkpoint_interval == 0:
        torch.save(model.state_dict(), os.path.join(checkpoints, f"yolov3_ckpt_{epoch}.pth"))
print("seen", model.seen)
checkpoints_dir.cleanup()
