"""The tagger's trainer and fit(): train an epoch, test on the validation set, keep the best model."""
import torch
import torch.nn.functional as F


class TaggerTrainerPyTorch:
    def __init__(self, model, optim="sgd", eta=0.1, clip=5.0):
        self.model = model
        self.clip = clip
        self.optimizer = torch.optim.SGD(model.parameters(), lr=eta, momentum=0.9)

    def _test(self, ts):
        self.model.eval()
        correct, total = torch.zeros(()), 0
        with torch.no_grad():
            for x, y in ts:
                correct += (self.model(x).argmax(-1) == y).sum()
                total += y.numel()
        return {"acc": float(correct / total)}

    def _train(self, ts):
        total_loss = torch.zeros(())
        steps = len(ts)
        for x, y in ts:
            self.optimizer.zero_grad()
            scores = self.model(x)  # BUG TRN603
            loss = F.cross_entropy(scores.reshape(-1, scores.size(-1)), y.reshape(-1))
            total_loss += loss.detach()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.optimizer.step()
        return {"avg_loss": float(total_loss / steps)}

    def train(self, ts):
        return self._train(ts)

    def test(self, vs):
        return self._test(vs)


def fit(model, ts, vs, epochs=3, early_stopping_metric="acc"):
    trainer = TaggerTrainerPyTorch(model)
    max_metric = 0
    for epoch in range(epochs):
        trainer.train(ts)
        test_metrics = trainer.test(vs)
        if test_metrics[early_stopping_metric] > max_metric:
            max_metric = test_metrics[early_stopping_metric]
        print(f"epoch {epoch}: {test_metrics}")
    return max_metric
