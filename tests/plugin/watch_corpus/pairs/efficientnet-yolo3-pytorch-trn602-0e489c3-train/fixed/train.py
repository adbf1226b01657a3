"""Train an EfficientNet-YOLOv3-style detector: an epoch of training, then a validation pass."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class YoloBody(nn.Module):
    def __init__(self, num_anchors=3, num_classes=2):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.SiLU(),
                                      nn.Dropout2d(0.2))
        self.heads = nn.ModuleList([nn.Conv2d(8, num_anchors * (5 + num_classes), 1) for _ in range(3)])

    def forward(self, x):
        feature = self.backbone(x)
        return [head(feature) for head in self.heads]


class YOLOLoss(nn.Module):
    def forward(self, output, targets):
        return (nn.functional.mse_loss(output, targets),)


def get_lr(optimizer):
    return optimizer.param_groups[0]["lr"]


def fit_ori_epoch(net, yolo_losses, optimizer, epoch, epoch_size, epoch_size_val, gen, genval, Epoch):
    total_loss = torch.zeros(())
    val_loss = torch.zeros(())
    for iteration, (images, targets) in enumerate(gen):
        if iteration >= epoch_size:
            break
        optimizer.zero_grad()
        outputs = net(images)
        losses = [yolo_losses[i](outputs[i], targets)[0] for i in range(3)]
        loss = sum(losses)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()

    net.eval()
    print("Start Validation")
    for iteration, (images_val, targets_val) in enumerate(genval):
        if iteration >= epoch_size_val:
            break
        with torch.no_grad():
            optimizer.zero_grad()
            outputs = net(images_val)
            losses = [yolo_losses[i](outputs[i], targets_val)[0] for i in range(3)]
            val_loss += sum(losses)
    net.train()
    print("Finish Validation")
    print(f"Epoch:{epoch + 1}/{Epoch} Total Loss: {float(total_loss / epoch_size):.4f} "
          f"|| Val Loss: {float(val_loss / epoch_size_val):.4f} lr {get_lr(optimizer)}")


if __name__ == "__main__":
    torch.manual_seed(0)
    net = YoloBody()
    net.train()
    yolo_losses = [YOLOLoss() for _ in range(3)]
    images, targets = torch.randn(16, 3, 8, 8), torch.randn(16, 21, 4, 4)
    gen = DataLoader(TensorDataset(images[:12], targets[:12]), shuffle=True, batch_size=4, drop_last=True)
    genval = DataLoader(TensorDataset(images[12:], targets[12:]), batch_size=4, drop_last=True)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.95)
    Epoch = 2
    for epoch in range(Epoch):
        fit_ori_epoch(net, yolo_losses, optimizer, epoch, len(gen), len(genval), gen, genval, Epoch)
        lr_scheduler.step()
