import torch.nn.functional as F

from engine import runner


class DistillRunner(runner.EpochRunner):
    def __init__(self, model, teacher, loader, epochs):
        super().__init__(model, loader, epochs)
        self.teacher = teacher

    def run_epoch(self, epoch):
        for x, _ in self.loader:
            self.optimizer.zero_grad()
            loss = F.kl_div(self.model(x).log_softmax(-1), self.teacher(x).softmax(-1), reduction="batchmean")
            loss.backward()
            self.optimizer.step()
