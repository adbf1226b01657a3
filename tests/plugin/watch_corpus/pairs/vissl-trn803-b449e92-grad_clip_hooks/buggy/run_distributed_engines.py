"""A classification task run by a small engine: forward, scaled backward, hooks, step."""
import torch
import torch.nn.functional as F
from torch import nn

from grad_clip_hooks import GradClipHook


class ClassificationTask:
    def __init__(self, model, data, hooks, amp=True):
        self.model, self.data, self.hooks = model, data, hooks
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        self.amp_grad_scaler = torch.amp.GradScaler("cpu", enabled=amp)
        self.amp = amp

    def run_hooks(self, name):
        for hook in self.hooks:
            getattr(hook, name)(self)

    def train_step(self, images, labels):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.amp):
            loss = F.cross_entropy(self.model(images).float(), labels)
        self.optimizer.zero_grad()
        self.amp_grad_scaler.scale(loss).backward()
        self.run_hooks("on_backward")
        self.amp_grad_scaler.step(self.optimizer)
        self.amp_grad_scaler.update()
        return loss.detach()

    def run(self, epochs=2):
        self.run_hooks("on_start")
        for epoch in range(epochs):
            losses = [self.train_step(images, labels) for images, labels in self.data]
            print(f"epoch {epoch}: loss {float(torch.stack(losses).mean()):.4f}")


torch.manual_seed(0)
images, labels = torch.randn(16, 3, 8, 8), torch.randint(0, 5, (16,))
data = [(images[i:i + 4], labels[i:i + 4]) for i in range(0, 16, 4)]
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
ClassificationTask(model, data, hooks=[GradClipHook(norm_type=2.0, max_norm=1.0)]).run()
