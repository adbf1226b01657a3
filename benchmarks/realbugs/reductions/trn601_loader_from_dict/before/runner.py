# realbug-expected: TRN601 shape=container case=parallelwavegan-trn601-8c03abb-train
import torch


class Runner:
    def evaluate(self):
        self.net.eval()
        total = 0.0
        for x, y in self.loaders["valid"]:
            total += self.loss_fn(self.net(x), y).item()
        self.net.train()
        return total
