# realbug-expected: TRN601 shape=helper case=parallelwavegan-trn601-8c03abb-train
import torch


class Runner:
    def _score(self, x, y):
        return self.loss_fn(self.net(x), y).item()

    def evaluate(self):
        self.net.eval()
        total = 0.0
        for x, y in self.valid_loader:
            total += self._score(x, y)
        self.net.train()
        return total
